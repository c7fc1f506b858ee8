"""``passthrough``: the upstream does full duplex itself; relay frames unchanged.

After the annotated ``session.created``, every frame is forwarded as the original
text in both directions ("echo the original data instead of re-serializing it").
Upstream frames are not parsed, except the one ``session.resumed`` of a resume (to
remember the upstream's rotated token); client frames are parsed once, only to
refuse what is not an event (DESIGN §7) before it reaches the upstream.

Resume is the upstream's own (vLLM-Omni keeps the session and its journal through
a disconnect); the proxy records which upstream holds the session so that any
replica can relay a ``session.resume`` to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import aiohttp

from proxy.client_io import CLOSED, ClientFrame
from proxy.persist import keep_binding
from proxy.store.base import LeaseLost, SessionRecord, StoreUnavailable, hash_token
from proxy.upstream import UpstreamLink
from shim.capabilities import Classification
from shim.journal import RecentIds

if TYPE_CHECKING:
    from proxy.pump import ClientSession

NORMAL_CLOSES = (1000, 1001)


async def run_passthrough(session: ClientSession, link: UpstreamLink, cls: Classification) -> None:
    upstream_session = link.created.get("session")
    if isinstance(upstream_session, dict) and isinstance(upstream_session.get("id"), str):
        session.passthrough_sid = upstream_session["id"]
    record = await _bind(session, link)
    created = session.annotated_created(link, cls, resume=record is not None)
    session.state.metrics.frames.labels("upstream_to_client").inc()
    session.client.send_event(created)
    store = session.state.store
    keeper = None
    if record is not None and store is not None:
        # The binding expires disconnect_grace_s after its last write: keep it fresh
        # for as long as the session lasts.
        grace = session.state.config.store.disconnect_grace_s
        keeper = asyncio.create_task(keep_binding(store, record, grace, session.log))
    try:
        await relay(session, link.ws, skip=link.opening_event)
    finally:
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await keeper


async def _bind(session: ClientSession, link: UpstreamLink) -> SessionRecord | None:
    """Record which upstream holds this session (for a resume on another replica).

    The record when a resume through the proxy will find the session again.
    """
    store, route = session.state.store, session.route
    upstream_session = link.created.get("session")
    token = link.created.get("resume_token")
    if (
        store is None
        or route is None
        or not isinstance(upstream_session, dict)
        or not isinstance(token, str)
    ):
        return None
    sid = upstream_session.get("id")
    if not isinstance(sid, str):
        return None
    record = SessionRecord(
        session_id=sid,
        token_hash=hash_token(token),
        model=route.model,
        mode="passthrough",
        epoch=1,
        owner=session.state.replica_id,
        upstream={"route": route.model, "url": link.url},
    )
    try:
        await store.create(record)
    except (StoreUnavailable, LeaseLost, ValueError) as exc:
        session.log.warning("passthrough_bind_failed", error=str(exc))
        return None
    return record


async def _applied_ids(session: ClientSession) -> RecentIds | None:
    """The client event ids this passthrough session already applied (any replica)."""
    state, sid = session.state, session.passthrough_sid
    if sid is None:
        return None
    ids = state.passthrough_ids.get(sid)
    if ids is None:
        ids = RecentIds(state.config.store.recent_event_ids)
        if state.store is not None:
            with contextlib.suppress(StoreUnavailable, ValueError):
                record = await state.store.load(sid)
                for event_id in record.recent_event_ids if record else []:
                    ids.seen(event_id)
        state.passthrough_ids[sid] = ids
        while len(state.passthrough_ids) > 2 * state.config.server.max_sessions:
            state.passthrough_ids.popitem(last=False)
    state.passthrough_ids.move_to_end(sid)
    return ids


async def _save_ids(session: ClientSession, ids: RecentIds) -> None:
    """On disconnect, leave the applied ids where a resume on any replica finds them."""
    store, sid = session.state.store, session.passthrough_sid
    if store is None or sid is None:
        return
    with contextlib.suppress(StoreUnavailable, LeaseLost, ValueError):
        record = await store.load(sid)
        if record is not None:
            record.recent_event_ids = ids.items()
            await store.save(record)


async def relay(
    session: ClientSession,
    up: aiohttp.ClientWebSocketResponse,
    skip: ClientFrame | None = None,
) -> None:
    client = session.client
    metrics = session.state.metrics
    to_client = metrics.frames.labels("upstream_to_client")
    to_client_bytes = metrics.bytes.labels("upstream_to_client")
    applied = await _applied_ids(session)

    def fresh(frame: ClientFrame) -> bool:
        """False for an event re-sent after a reconnect: it was applied already."""
        event_id = frame.event.get("event_id")
        return applied is None or not isinstance(event_id, str) or not applied.seen(event_id)

    async def upstream_to_client() -> None:
        async for msg in up:
            if msg.type == aiohttp.WSMsgType.TEXT:
                to_client.inc()
                to_client_bytes.inc(len(msg.data))
                if not client.send_text(msg.data):
                    return
            elif msg.type == aiohttp.WSMsgType.BINARY:
                to_client.inc()
                to_client_bytes.inc(len(msg.data))
                client.send_bytes(msg.data)
            else:
                break

    async def client_to_upstream() -> None:
        for frame in session.pending:
            if fresh(frame) and frame is not skip:  # the opener was applied: remember it
                await up.send_str(frame.raw)
        session.pending.clear()
        while True:
            item = await client.inbox.get()
            if item is CLOSED:
                return
            assert isinstance(item, ClientFrame)
            if fresh(item):
                await up.send_str(item.raw)

    down = asyncio.create_task(upstream_to_client(), name="upstream-to-client")
    upw = asyncio.create_task(client_to_upstream(), name="client-to-upstream")
    try:
        done, _ = await asyncio.wait({down, upw}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (down, upw):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if down in done:
        # The upstream ended the session (or dropped): say so, close like it did.
        code = up.close_code
        if code in NORMAL_CLOSES:
            await client.close(code, "upstream closed")
        else:
            metrics.upstream_errors.labels("closed").inc()
            session.log.warning("upstream_closed", close_code=code)
            client.send_error(
                "upstream_unavailable", f"upstream closed the connection (code {code})"
            )
            await client.close(1011, "upstream closed")
    await up.close()
    if applied is not None:
        await _save_ids(session, applied)
