"""Relay a passthrough session: the original frames, both ways, unchanged."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp

from proxy.client_frames import ClientFrame
from proxy.client_io import CLOSED
from proxy.connection import ClientConnection
from proxy.passthrough.applied_ids import applied_ids, ids_writer
from proxy.passthrough.binding import bind, keep_binding
from proxy.upstream import UpstreamLink, close_within, send_within
from shim.capabilities import Classification, proxy_capabilities

NORMAL_CLOSES = (1000, 1001)


async def run_passthrough(
    session: ClientConnection, link: UpstreamLink, cls: Classification
) -> None:
    upstream_session = link.created.get("session")
    if isinstance(upstream_session, dict) and isinstance(upstream_session.get("id"), str):
        session.passthrough_sid = upstream_session["id"]
    record = await bind(session, link)
    created = annotated_created(link, cls, resume=record is not None)
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
        epoch = record.epoch if record is not None else None
        await relay(session, link.ws, skip=link.opening_event, epoch=epoch)
    finally:
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await keeper


def annotated_created(link: UpstreamLink, cls: Classification, resume: bool) -> dict[str, Any]:
    """The upstream's session.created with the proxy's truth added to capabilities."""
    created = dict(link.created)
    session = dict(created.get("session") or {})
    session["capabilities"] = proxy_capabilities(cls, resume_available=resume)
    created["session"] = session
    return created


async def relay(
    session: ClientConnection,
    up: aiohttp.ClientWebSocketResponse,
    skip: ClientFrame | None = None,
    epoch: int | None = None,
) -> None:
    """Relay until either side ends; ``epoch``: the binding's lease, if it has one
    (the applied client event ids are added to the store under it)."""
    client = session.client
    metrics = session.state.metrics
    to_client = metrics.frames.labels("upstream_to_client")
    to_client_bytes = metrics.bytes.labels("upstream_to_client")
    applied = await applied_ids(session)
    writer = ids_writer(session, epoch)
    send_timeout = session.state.config.server.upstream_send_timeout_s
    stalled = False

    def fresh(frame: ClientFrame) -> bool:
        """False for an event re-sent after a reconnect: it was applied already."""
        event_id = frame.event.get("event_id")
        return applied is None or not isinstance(event_id, str) or not applied.seen(event_id)

    async def forward(frame: ClientFrame) -> None:
        await send_within(up, frame.raw, send_timeout)
        event_id = frame.event.get("event_id")
        if writer is not None and isinstance(event_id, str):
            writer.applied(event_id)

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
        nonlocal stalled
        try:
            for frame in session.pending:
                if fresh(frame) and frame is not skip:  # the opener was applied: remember it
                    await forward(frame)
            session.pending.clear()
            while True:
                item = await client.inbox.get()
                if item is CLOSED:
                    return
                assert isinstance(item, ClientFrame)
                if fresh(item):
                    await forward(item)
        except TimeoutError:
            stalled = True  # the upstream stopped reading

    down = asyncio.create_task(upstream_to_client(), name="upstream-to-client")
    upw = asyncio.create_task(client_to_upstream(), name="client-to-upstream")
    try:
        done, _ = await asyncio.wait({down, upw}, return_when=asyncio.FIRST_COMPLETED)
        if upw in done and not upw.cancelled() and upw.exception() is not None:
            # A send failed on an upstream that is closing: its close frame is on the
            # way, let the reader see it (bounded) so the client gets its code, not 1006.
            await asyncio.wait({down}, timeout=1.0)
            done = {upw, down}
    finally:
        for task in (down, upw):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if stalled or down in done:
        # The upstream ended the session, dropped, missed its heartbeat or stopped
        # reading: say so, and close like it did.
        code = up.close_code
        if stalled:
            metrics.upstream_errors.labels("timeout").inc()
            session.log.warning("upstream_lost", reason=f"took no frame for {send_timeout:g} s")
            client.send_error(
                "upstream_unavailable", f"the upstream took no frame for {send_timeout:g} s"
            )
            await client.close(1011, "upstream not reading")
        elif code in NORMAL_CLOSES:
            await client.close(code, "upstream closed")
        else:
            metrics.upstream_errors.labels("closed").inc()
            session.log.warning("upstream_closed", close_code=code)
            client.send_error(
                "upstream_unavailable", f"upstream closed the connection (code {code})"
            )
            await client.close(1011, "upstream closed")
    if writer is not None:
        await writer.close()
    await close_within(up)
