"""A passthrough resume's rebind mark: the binding's hash may be about to move.

Before a resume is relayed to the upstream, the binding is marked
(``mark_rebinding``): up to the mark's end its hash may be about to move to a token
the store does not know yet, so a resume meanwhile whose token does not match is
told to try again (``session_resume_unavailable``), not denied; the rebind clears
every mark (``proxy/passthrough/rebind.py``). A store that does not take the mark
refuses the resume before the upstream rotates anything. A rebind still pending
near the mark's end holds it on (``hold``). A resume that ends with no token rotated
(the upstream refused it, or did not answer it) takes its own mark away
(``unmark``); each resume's mark is its own (``SessionStore.rebind_mark``), so that
of another resume relayed meanwhile, on any replica, stands until that one ends too.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass

from proxy.logging import Logger
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable

# Backoff between tries of a store write (a mark taken away, a rebind): from the
# first, doubling, up to the last.
FIRST_RETRY_S = 0.05
MAX_RETRY_S = 1.0

# Background writes, kept referenced until they end.
pending_writes: set[asyncio.Task[None]] = set()


@dataclass(slots=True)
class Mark:
    """One resume's mark: its id, its end (wall clock, ms), how long each hold lasts,
    the epoch it was set at (a rebind moves on from it, clearing every mark: a hold or
    a take-away at the epoch the relay took on since would set one again)."""

    id: str
    until_ms: int
    hold_s: float
    epoch: int


async def mark_rebinding(store: SessionStore, record: SessionRecord, hold_s: float) -> Mark:
    """Mark ``record``'s binding as possibly moving for ``hold_s``, fenced by its epoch
    (StoreUnavailable, LeaseLost: nothing was relayed, the client's token still
    resumes); the mark, for ``hold`` and ``unmark``."""
    mark, now = Mark(secrets.token_hex(8), 0, hold_s, record.epoch), time.time()
    mark.until_ms = round((now + hold_s) * 1000)
    sid = record.session_id
    now_ms = round(now * 1000)
    record.rebind_until_ms = await store.rebind_mark(
        sid, mark.epoch, mark.id, mark.until_ms, now_ms
    )
    return mark


async def hold(store: SessionStore, record: SessionRecord, mark: Mark, within_s: float) -> None:
    """A rebind still pending: ``mark`` held another ``hold_s`` if it ends within
    ``within_s`` (past half its hold), so a resume with the token not bound yet is
    still told to try again. Best effort, fenced by the epoch: a store that refuses
    it leaves the mark as it was (the rebind's next try tells if it landed)."""
    now = time.time()
    if mark.until_ms - now * 1000 > (mark.hold_s / 2 + within_s) * 1000:
        return
    until_ms, now_ms = round((now + mark.hold_s) * 1000), round(now * 1000)
    try:
        left = await store.rebind_mark(record.session_id, mark.epoch, mark.id, until_ms, now_ms)
    except (StoreUnavailable, LeaseLost):
        return
    mark.until_ms, record.rebind_until_ms = until_ms, left


async def unmark(
    store: SessionStore, record: SessionRecord, mark: Mark, retry_s: float, log: Logger
) -> None:
    """Take ``mark`` away: the resume that wrote it rotated no token. Fenced by the
    epoch (a rebind since has cleared it). Returns once the store answered the first
    try; one it refused is tried again in the background, up to ``retry_s`` (the
    mark's own hold: past it the mark is gone anyway), the resume cancelled or not."""
    loop = asyncio.get_running_loop()
    tried = asyncio.Event()
    deadline = loop.time() + retry_s
    task = loop.create_task(_unmarked(store, record, mark, deadline, tried, log))
    pending_writes.add(task)
    task.add_done_callback(pending_writes.discard)
    await tried.wait()


async def _unmarked(
    store: SessionStore,
    record: SessionRecord,
    mark: Mark,
    deadline: float,
    tried: asyncio.Event,
    log: Logger,
) -> None:
    loop = asyncio.get_running_loop()
    delay, tries = FIRST_RETRY_S, 0
    try:
        while True:
            tries += 1
            now_ms = round(time.time() * 1000)
            try:
                left = await store.rebind_mark(record.session_id, mark.epoch, mark.id, 0, now_ms)
            except StoreUnavailable as exc:
                tried.set()
                if loop.time() + delay >= deadline:  # it holds to its end: resumes retry
                    log.warning("passthrough_unmark_failed", tries=tries, error=str(exc))
                    return
                await asyncio.sleep(delay)
                delay = min(2 * delay, MAX_RETRY_S)
                continue
            except LeaseLost:  # another resume's rebind cleared every mark, or it expired
                return
            record.rebind_until_ms = left
            return
    finally:
        tried.set()


def rebinding(record: SessionRecord) -> bool:
    """Whether a resume of ``record`` relayed to its upstream may not have bound the
    token the upstream rotated to yet."""
    return record.rebind_until_ms > time.time() * 1000
