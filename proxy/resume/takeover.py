"""``resume``: find where a session is (alive here, in the store as emulated or as
passthrough) and take it over for this connection."""

from __future__ import annotations

import time

from proxy.connection import ClientConnection
from proxy.emulated.runner import live_runner
from proxy.passthrough.rebind_mark import rebinding
from proxy.resume.client_attach import Attacher
from proxy.resume.from_store import take_from_store
from proxy.resume.lease import load_record
from proxy.resume.local import take_local
from proxy.resume.passthrough import take_passthrough
from proxy.resume.request import (
    ResumeFailed,
    ResumeRequest,
    denied,
    expired,
    rotating,
    shutting_down,
)
from proxy.store.base import token_matches


async def resume(conn: ClientConnection, req: ResumeRequest) -> None:
    """Resume, then run the attachment until it ends; ResumeFailed before anything is sent.

    The caller reports a ResumeFailed to the client, which may then start fresh.
    """
    metrics = conn.state.metrics
    started = time.monotonic()
    try:
        attach = await _take(conn, req)
    except ResumeFailed as exc:
        metrics.resumes.labels(exc.code).inc()
        raise
    metrics.resumes.labels("resumed").inc()
    metrics.resume_time.observe(time.monotonic() - started)
    await attach()


async def _take(conn: ClientConnection, req: ResumeRequest) -> Attacher:
    state = conn.state
    if state.draining:
        # Taking the session here would only hand it over again in a moment.
        raise shutting_down()
    runner = live_runner(state, req.session_id)
    if runner is not None:
        if runner.persister.key_id != conn.key_id:
            raise denied()  # resume is bound to the credentials that opened it
        async with runner.persister.resume_lock:
            attach = await take_local(conn, runner, req)
        if attach is not None:
            return attach
    store = state.store
    if store is None:
        raise expired()
    record = await load_record(store, req.session_id)
    if record is None:
        raise expired()
    if record.key_id != conn.key_id:
        raise denied()
    if not token_matches(req.resume_token, record.token_hash):
        # A passthrough resume relayed meanwhile may not have bound the token its
        # upstream rotated to yet (proxy/passthrough/rebind.py): try again.
        raise rotating() if rebinding(record) else denied()
    if record.mode == "passthrough":
        return await take_passthrough(conn, record, req)
    return await take_from_store(conn, store, record, req)
