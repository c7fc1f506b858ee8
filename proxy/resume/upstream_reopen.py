"""Reach the upstream for a session taken over from the store.

A duplex upstream that can resume gets its own session back with its own
``session.resume`` (it replays what followed the snapshot, so a response goes on);
otherwise a fresh upstream session opens with the session's settings.

A fresh session is tried once before the lease moves. An upstream that refuses it
as full (``resource_exhausted``) is most likely full of this very session: its old
owner's upstream session holds the slot (vLLM-Omni 0.30.0 takes one session by
default, docs/fidelity.md, row 8). Only the move frees it: the old owner, fenced
out, ends that session (``proxy/emulated/runner.py``, ``stop``), so the fresh
session is dialled again after the move, waiting for the slot
(``proxy/upstream_fresh.py``).

An upstream session the old owner left (its token in the snapshot) that does not
come back is ended once the lease moved, whichever way the fresh session opened:
left to its grace it would go on generating and hold an upstream slot.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, replace
from typing import Any

import aiohttp

from proxy.config import Route
from proxy.connection import ClientConnection
from proxy.persist.checkpoint import checkpoint_of
from proxy.persist.sealing import stored_binding
from proxy.resume.reach import reach_upstream
from proxy.resume.request import ResumeFailed, upstream_unavailable
from proxy.state import ProxyState
from proxy.store.base import SessionRecord
from proxy.store.secret_box import secret_box
from proxy.upstream import (
    UpstreamLink,
    UpstreamRefused,
    UpstreamUnavailable,
    opening_update,
    resume_over,
    resume_url,
)
from proxy.upstream_book import exhausted
from proxy.upstream_fresh import UPSTREAM_GRACE_S, dial_fresh, end_over
from shim.dialects.relay_keep_snapshot import kept
from shim.dialects.relay_wait_snapshot import waiting
from shim.snapshot import opening_session


@dataclass
class UpstreamSocket:
    """An upstream socket opened to resume an upstream session on; nothing sent yet."""

    ws: aiohttp.ClientWebSocketResponse
    url: str


@dataclass
class SlotHeld:
    """The upstream refused a fresh session as full: it opens after the lease moved."""


Reached = UpstreamLink | UpstreamSocket | SlotHeld


async def let_go(reached: Reached) -> None:
    """Close what was reached for a takeover that does not happen."""
    if isinstance(reached, UpstreamLink | UpstreamSocket):
        await reached.ws.close()


async def discard(dialling: asyncio.Future[Reached]) -> None:
    dialling.cancel()
    result = (await asyncio.gather(dialling, return_exceptions=True))[0]
    if isinstance(result, UpstreamLink | UpstreamSocket):
        await result.ws.close()


class SlotFull(Exception):
    """The upstream refused a fresh session as full, and no wait was allowed."""


async def fresh_before_move(
    state: ProxyState, route: Route, record: SessionRecord
) -> UpstreamLink | SlotHeld:
    """A fresh upstream session tried once, before the lease moves; ``SlotHeld`` when
    the upstream is full (the session's own upstream session may be what fills it).
    Nothing moved yet: a failure is worth trying again (close 1013)."""
    try:
        return await reopen_upstream(state, route, record, hold_s=0.0)
    except SlotFull:
        return SlotHeld()
    except ResumeFailed as exc:
        raise upstream_unavailable(f"{exc}; try again or start a new session") from None


async def reopen_upstream(
    state: ProxyState, route: Route, record: SessionRecord, hold_s: float = UPSTREAM_GRACE_S
) -> UpstreamLink:
    """A fresh upstream session for a session taken over from the store, a capacity
    refusal retried for ``hold_s`` (then ``SlotFull`` if ``hold_s`` is 0)."""
    assert state.http is not None
    up = record.upstream
    cfg = state.config.server
    upstream_model = str(up.get("upstream_model", record.model))
    session: dict[str, Any] | None = None
    if up.get("kind") == "turn":
        # Known turn-based: skip the ?duplex=1 attempt it would refuse.
        route = replace(route, request_duplex=False)
    else:
        # The duplex relay forwarded the client's session.update upstream: the fresh
        # upstream session opens with it (turn detection stays the proxy's).
        session = opening_session(checkpoint_of(record).shim)
    try:
        # The lost session may hold the upstream's slot for its grace: proxy/upstream_fresh.py.
        return await dial_fresh(
            state.http,
            state.upstream_url(route),
            route,
            opening_update(route, upstream_model, session),
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
            heartbeat_s=cfg.upstream_heartbeat_s,
            hold_s=hold_s,
        )
    except UpstreamRefused as exc:
        if hold_s <= 0 and exhausted(exc.event):
            raise SlotFull() from None
        state.metrics.upstream_errors.labels("connect").inc()
        raise ResumeFailed("upstream_unavailable", "cannot reopen the upstream session") from None
    except UpstreamUnavailable:
        state.metrics.upstream_errors.labels("connect").inc()
        raise ResumeFailed("upstream_unavailable", "cannot reopen the upstream session") from None


async def connect_upstream(
    state: ProxyState, route: Route, record: SessionRecord
) -> UpstreamSocket:
    """A socket to resume the record's upstream session on."""
    upstream_model = str(record.upstream.get("upstream_model", record.model))
    url = resume_url(state.upstream_url(route), upstream_model)
    return UpstreamSocket(await reach_upstream(state, route, url), url)


def resumes_own(record: SessionRecord, last: int) -> bool:
    """Whether the upstream's own session may come back for a client at ``last``.

    Not when the client is ahead of the snapshot (its old owner died before writing
    what it had sent: the upstream would replay events the client already has), nor
    when a turn the proxy holds over the answer is in it, a push-to-talk commit that
    waits for the answer's end or speech kept as the next turn: the old owner may
    have sent it after the snapshot, and the upstream's session would hear the turn
    again (``shim/dialects/relay_wait_snapshot.py``, ``relay_keep_snapshot.py``).
    """
    cp = checkpoint_of(record)
    return last <= cp.seq and not waiting(cp.shim) and not kept(cp.shim)


async def reattach_upstream(
    conn: ClientConnection, route: Route, record: SessionRecord, last: int, reached: Reached
) -> tuple[UpstreamLink, bool]:
    """The upstream for the session taken over, and whether it is its own session.

    The upstream's own session comes back where the snapshot has one to resume and
    ``resumes_own`` allows it. Else, or if the upstream cannot resume it, a fresh
    upstream session opens.
    """
    state = conn.state
    binding = stored_binding(record, secret_box(state.config.store))
    if isinstance(reached, UpstreamLink):
        # A fresh session opened before the move: the upstream's own session was not
        # to come back (``resumes_own``). Left to its grace it would go on generating
        # and hold an upstream slot: ended like the others below.
        if binding is not None:
            await _end_left(state, route, record, binding)
        return reached, False
    if isinstance(reached, SlotHeld):
        # The move fenced the old owner out. Without the upstream's token it ends its
        # upstream session itself; with it, that session is ended here (the old owner
        # leaves it for the new one). The fresh one opens as soon as the slot frees.
        conn.log.info("upstream_slot_held", effect="fresh session once the slot frees")
        if binding is not None:
            await _end_left(state, route, record, binding)
    elif binding is not None and resumes_own(record, last):
        up_sid, up_token, up_seq = binding
        try:
            link = await resume_over(
                reached.ws,
                reached.url,
                up_sid,
                up_token,
                up_seq,
                state.config.server.classify_timeout_s,
            )
        except (UpstreamUnavailable, UpstreamRefused) as exc:
            conn.log.info("upstream_resume_failed", error=str(exc)[:200], effect="fresh session")
        else:
            return link, True
    elif binding is not None:
        # It may not come back (resumes_own), but left in its grace it would hold
        # the upstream's slot: end it before the fresh one opens.
        timeout = state.config.server.classify_timeout_s
        await end_over(reached.ws, reached.url, *binding, timeout)
    else:
        await reached.ws.close()
    try:
        return await reopen_upstream(state, route, record), False
    except ResumeFailed as exc:
        # The lease has moved: the session cannot go on anywhere (close 1008).
        conn.log.warning("session_lost", reason="upstream unreachable after the takeover")
        raise ResumeFailed(exc.code, f"{exc}; start a new session") from None


async def _end_left(
    state: ProxyState, route: Route, record: SessionRecord, binding: tuple[str, str, int]
) -> None:
    """End the upstream session the old owner left to the lease's holder, on a socket
    of its own (``reached`` went to the fresh session, or was refused)."""
    with contextlib.suppress(ResumeFailed):
        sock = await connect_upstream(state, route, record)
        await end_over(sock.ws, sock.url, *binding, state.config.server.classify_timeout_s)
