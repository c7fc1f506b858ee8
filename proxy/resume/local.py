"""Resume an emulated session still alive on this replica.

The upstream socket never dropped: the lease moves and the client reattaches.
While the store is down, the local token still resumes it. A runner here that
another replica took over without its noticing yet lets go, and the resume goes on
through the store.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Coroutine
from typing import Any

from proxy.clock import now_ms
from proxy.connection import ClientConnection
from proxy.emulated.runner import EmulatedRunner
from proxy.logging import get_logger
from proxy.resume.client_attach import Attacher, attacher
from proxy.resume.lease import load_record, moved_away, rotate
from proxy.resume.request import ResumeRequest, denied, expired, gap, shutting_down
from proxy.store.base import LeaseLost, SessionRecord, StoreUnavailable, hash_token, token_matches

_tasks: set[asyncio.Task[None]] = set()


def _background(coro: Coroutine[Any, Any, None]) -> None:
    task = asyncio.get_running_loop().create_task(coro)
    _tasks.add(task)
    task.add_done_callback(_finished)


def _finished(task: asyncio.Task[None]) -> None:
    _tasks.discard(task)
    if not task.cancelled() and (exc := task.exception()) is not None:
        get_logger().error("background_task_failed", error=repr(exc), exc_info=exc)


async def take_local(
    conn: ClientConnection, runner: EmulatedRunner, req: ResumeRequest
) -> Attacher | None:
    """Resume a session alive on this replica; None if it was taken over elsewhere.

    The runner knows its token and epoch, so the usual case costs three fenced
    writes and no read.
    """
    p = runner.persister
    if p.replaced or runner.finished.is_set():
        return None
    if not p.enabled:
        raise expired()  # opened while the store was down: never resumable
    store = conn.state.store
    assert store is not None
    sid, owner = req.session_id, conn.state.replica_id
    if not token_matches(req.resume_token, p.token_hash):
        # Perhaps a resume elsewhere rotated the token and this runner is stale.
        if await moved_away(store, sid, p.epoch):
            _let_go(runner)
            return None
        raise denied()
    if runner.journal.after(req.last_seq, now_ms()) is None:
        raise gap()
    if conn.state.draining:
        raise shutting_down()  # before the token rotates: the client keeps its own
    conn.committing()
    token = secrets.token_urlsafe(32)
    new_hash = hash_token(token)
    degraded: str | None = None
    async with p.lock:
        try:
            first = await store.take_over(sid, owner, p.epoch)
        except StoreUnavailable:
            first, degraded = None, "session store unavailable"
        except LeaseLost:
            current = await load_record(store, sid)
            if current is not None:
                _let_go(runner)  # another replica holds it now
                return None
            first, degraded = None, "the session store lost the session"
        if first is not None:
            written: list[int] = []

            async def rotated(epoch: int) -> SessionRecord:
                record = await p.checkpoint(epoch, new_hash)
                written.append(runner.journal.seq)  # what that record holds, no further
                return record

            epoch = await rotate(store, sid, owner, first, token, rotated)
            p.adopt(epoch, token, saved=written[-1] if written else None)
    if degraded is not None:
        # No one else can resume it meanwhile (the store cannot hand it out): carry
        # on here; the persister saves the new token once the store answers.
        p.adopt(p.epoch, token)
        conn.log.warning("resume_without_store", reason=degraded)
    conn.log = conn.log.bind(session_id=sid)
    conn.log.info("session_resumed", where="local", last_seq=req.last_seq, took_ms=req.took_ms())
    return attacher(conn, runner, token, req.last_seq)


def _let_go(runner: EmulatedRunner) -> None:
    """A stale runner: it lets go (its client, if any, gets session.replaced) while
    the resume goes on through the store."""
    runner.persister.let_go()
    _background(runner.replaced_elsewhere())
