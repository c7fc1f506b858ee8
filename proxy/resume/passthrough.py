"""Resume a passthrough session: the upstream keeps its own session and journal.

The proxy finds the upstream from the store, relays the client's ``session.resume``
to it as sent, and maps a refusal to the codes this proxy documents. The upstream's
rotated token is bound in the store before the client is told it, where the store
answers in time (``proxy/passthrough/rebind.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from proxy.connection import ClientConnection
from proxy.passthrough.binding import keep_binding
from proxy.passthrough.rebind import rebind
from proxy.passthrough.rebind_mark import mark_rebinding, unmark
from proxy.passthrough.relay import relay
from proxy.resume.client_attach import Attacher
from proxy.resume.reach import reach_upstream
from proxy.resume.request import (
    ResumeFailed,
    ResumeRequest,
    conflict,
    denied,
    expired,
    gap,
    shutting_down,
    unavailable,
    upstream_unavailable,
)
from proxy.store.base import LeaseLost, SessionRecord, StoreUnavailable
from proxy.upstream import UpstreamUnavailable, ask, with_query
from shim.wire import error_code

# The upstream's refusals, as the codes this proxy documents.
_UPSTREAM_CODES = {
    "invalid_resume_token": "session_resume_denied",
    "session_resume_expired": "session_resume_expired",
}


async def take_passthrough(
    conn: ClientConnection, record: SessionRecord, req: ResumeRequest
) -> Attacher:
    """The upstream keeps its own session and journal: relay the resume to it."""
    state = conn.state
    assert state.http is not None and state.store is not None
    store = state.store
    route = state.config.route_for(str(record.upstream.get("route", record.model)))
    if route is None:
        raise expired()
    cfg = state.config.server
    url = with_query(state.upstream_url(route), {"duplex": "1", "autostart": "0"})
    ws = await reach_upstream(state, route, url)
    if state.draining:  # before the upstream rotates its token: the client keeps its own
        await ws.close()
        raise shutting_down()
    scfg = state.config.store
    try:
        # Its new token may reach the client before the store: a resume meanwhile is
        # told to try again, not denied.
        hold_s = scfg.disconnect_grace_s + cfg.classify_timeout_s
        mark = await mark_rebinding(store, record, hold_s)
    except (StoreUnavailable, LeaseLost) as exc:
        await ws.close()
        raise (unavailable() if isinstance(exc, StoreUnavailable) else conflict()) from None
    conn.committing()
    rotated, rebound = False, None  # the token moved; its rebind (Rebinding)
    try:
        # Relayed as the client sent it: the upstream's own session.resume.
        first, answer = await ask(ws, req.raw, cfg.classify_timeout_s)
        if first.get("type") != "session.resumed":
            await ws.close()
            raise _upstream_refusal(first)
        token = first.get("resume_token")
        if isinstance(token, str):
            # Before the client is told the new token: the store should know it first.
            wait_s, grace_s = scfg.rebind_wait_s, scfg.disconnect_grace_s
            rotated = True
            rebinds = state.metrics.passthrough_rebinds
            rebound = await rebind(
                store,
                record,
                state.replica_id,
                token,
                mark,
                wait_s,
                grace_s,
                conn.log,
                lambda outcome: rebinds.labels(outcome).inc(),
            )
    except UpstreamUnavailable:
        # Nothing bound: the client's token still resumes, unless the upstream rotated
        # it unanswered (it then denies it: docs/fidelity.md, "Known gaps").
        raise upstream_unavailable(
            "the upstream did not answer the resume; try again or start a new session"
        ) from None
    finally:
        if not rotated:  # no token the store does not know: the mark is done with
            await unmark(store, record, mark, hold_s, conn.log)
    conn.log = conn.log.bind(session_id=req.session_id, mode="passthrough")
    conn.log.info("session_resumed", where="upstream", last_seq=req.last_seq, took_ms=req.took_ms())

    async def attach() -> None:
        conn.route = route  # the session holds its upstream's slot again (proxy/capacity.py)
        conn.client.send_text(answer)
        conn.told()
        # Appends cost their time at the format the upstream resumed the session with.
        conn.client.rate.clock.accepted(first.get("session"))
        grace = state.config.store.disconnect_grace_s
        keeper = asyncio.create_task(keep_binding(store, record, grace, conn.log))
        labels = ("passthrough", route.model, route.upstream_model or route.model)
        active = state.metrics.sessions_active.labels(*labels)
        active.inc()  # the resumed session is live on this connection
        try:
            # A rebind not landed yet is tried on while the relay keeps the binding alive.
            with rebound.held() if rebound is not None else contextlib.nullcontext():
                await relay(conn, ws, binding=record)
        finally:
            active.dec()
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)

    return attach


def _upstream_refusal(event: dict[str, Any]) -> ResumeFailed:
    if event.get("type") == "session.resync_required":
        return gap()
    code = error_code(event)
    mapped = _UPSTREAM_CODES.get(str(code), "session_resume_failed")
    if mapped == "session_resume_expired":
        return expired()
    if mapped == "session_resume_denied":
        return denied()
    return ResumeFailed(mapped, f"the upstream refused the resume ({code})", native_code=str(code))
