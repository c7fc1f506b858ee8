"""Relay a passthrough session: the original frames, both ways, unchanged."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import aiohttp

from proxy.client_frames import ClientFrame
from proxy.client_io import CLOSED
from proxy.client_limits import TOLD_TYPE_WITHIN
from proxy.connection import ClientConnection
from proxy.metrics import FrameTally
from proxy.passthrough.applied_ids import applied_ids, ids_writer
from proxy.passthrough.binding import bind, keep_binding
from proxy.store.base import SessionRecord
from proxy.upstream import UpstreamLink, close_within, send_within
from proxy.ws_direct import (
    DIRECT_ANY_TEXT,
    DIRECT_MAX_BYTES,
    buffer_size,
    fits_direct,
    payload_writer,
    tap_queue,
    text_writer,
)
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
    session.told()
    session.client.rate.clock.accepted(created.get("session"))
    store = session.state.store
    keeper = None
    if record is not None and store is not None:
        # The binding expires disconnect_grace_s after its last write: keep it fresh
        # for as long as the session lasts.
        grace = session.state.config.store.disconnect_grace_s
        keeper = asyncio.create_task(keep_binding(store, record, grace, session.log))
    try:
        await relay(session, link.ws, skip=link.opening_event, binding=record)
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
    binding: SessionRecord | None = None,
) -> None:
    """Relay until either side ends; ``binding``: the session's store record, if it has
    one (the applied client event ids are added to the store under its lease)."""
    client = session.client
    metrics = session.state.metrics
    to_client = FrameTally(metrics, "upstream_to_client")
    applied = await applied_ids(session)
    writer = ids_writer(session, binding)
    send_timeout = session.state.config.server.upstream_send_timeout_s
    stalled = False
    # A send that failed in the client's reader (the sink), for the relay to act on.
    failed: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()

    def resent(event_id: object) -> bool:
        """Re-sent after a reconnect: it was applied already."""
        return isinstance(event_id, str) and applied is not None and applied.seen(event_id)

    def sent(event_id: object) -> None:
        """It reached the upstream: a resume must not apply it again."""
        if writer is not None and isinstance(event_id, str):
            writer.applied(event_id)

    # Looked up once, not per frame: the upstream's buffer, what a client is told.
    up_buffered, told, tally_down = buffer_size(up), client.rate.clock.told, to_client.add

    async def forward(frame: ClientFrame) -> None:
        event_id = frame.event.get("event_id")
        if resent(event_id):
            return
        if up_buffered() == 0 and fits_direct(frame.raw):
            await up.send_str(frame.raw)  # cannot wait (see ws_direct.DIRECT_MAX_BYTES): no timer
        else:
            await send_within(up, frame.raw, send_timeout)
        sent(event_id)

    up_write = text_writer(up)
    parked: asyncio.Future[Any] | None = None  # the relay's wait for the inbox, idle

    def idle() -> bool:
        """Nothing in hand here and the relay running: a client frame may go up from
        the client's socket callback (if the upstream's buffer has room)."""
        return parked is not None and not parked.done() and not failed.done()

    def ready(text: str) -> bool:
        """Whether a client frame ``text`` can go up at once."""
        fits = len(text) <= DIRECT_ANY_TEXT or fits_direct(text)
        return up_write is not None and fits and idle() and not up_buffered()

    def go_up(event: dict[str, Any], data: Any, write: Callable[[Any], bool]) -> None:
        """A frame up at once, its readiness checked (a failure ends the relay, as in
        ``sink``). An event without an id (most appends) skips the id bookkeeping."""
        event_id = event.get("event_id")
        if event_id is not None and resent(event_id):
            return
        if not write(data):
            failed.set_result(ConnectionResetError("the upstream socket is closing"))
        elif event_id is not None:
            sent(event_id)

    def forward_now(frame: ClientFrame) -> None:
        """``forward`` at once, ``ready`` said so."""
        assert up_write is not None
        go_up(frame.event, frame.raw, up_write)

    up_write_made = payload_writer(up)

    def ready_made(n_bytes: int) -> bool:
        """``ready`` for a frame as the client sent it (``proxy/client_made.py``)."""
        fits = n_bytes <= DIRECT_MAX_BYTES
        return up_write_made is not None and fits and idle() and not up_buffered()

    def forward_made(event: dict[str, Any], payload: bytearray) -> None:
        """``forward_now`` of its event and its bytes, masked again as they go."""
        assert up_write_made is not None
        go_up(event, payload, up_write_made)

    async def sink(frame: ClientFrame) -> None:
        """Forward from the client's reader task; a failure ends the relay."""
        if failed.done():
            return
        try:
            await forward(frame)
        except Exception as exc:  # the upstream stopped reading, or its socket closed
            failed.set_result(exc)

    write_now = client.write_now

    def direct(text: str) -> bool:
        """An upstream frame written to the client from the socket's data callback."""
        if not write_now(text):
            return False  # queued: the loop below sends it
        told(text)  # the format the upstream accepted, if it says
        tally_down(len(text))
        return True

    write_made = client.write_frame_now

    def direct_made(frame: bytes, head: int) -> bool:
        """``direct`` of a whole frame as the upstream sent it (``proxy/ws_raw.py``):
        written as it came, when its text is ASCII (so valid UTF-8) and names no
        session event near its start (``told`` has nothing to do with it)."""
        text = frame[head:]
        if not text.isascii() or text.find(b'"session.', 0, TOLD_TYPE_WITHIN) >= 0:
            return False
        if not write_made(frame):
            return False
        tally_down(len(text))
        return True

    async def upstream_to_client() -> None:
        # The tap takes frames only while this task waits with none in hand, and
        # only when none is queued or parked before them (proxy/ws_direct.py
        # ``TapQueue.arm``): their order holds.
        tap = tap_queue(up)
        try:
            while True:
                tap.arm(direct, direct_made)
                msg = await up.receive()
                tap.tap = tap.raw = None
                if msg.type == aiohttp.WSMsgType.TEXT:
                    to_client.add(len(msg.data))
                    client.rate.clock.told(msg.data)
                    if not await client.send_now(msg.data):
                        return
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    to_client.add(len(msg.data))
                    client.send_text(msg.data)
                else:
                    return
        finally:
            tap.tap = tap.raw = None

    async def client_to_upstream() -> None:
        nonlocal stalled, parked
        try:
            for frame in session.pending:
                if frame is not skip:  # the opener was applied: remember it
                    await forward(frame)
                elif applied is not None and isinstance(frame.event.get("event_id"), str):
                    applied.seen(frame.event["event_id"])
            session.pending.clear()
            while not client.inbox.empty():  # read before the relay began
                item = client.inbox.get_nowait()
                if item is CLOSED:
                    return
                assert isinstance(item, ClientFrame)
                await forward(item)
            # From here the reader forwards each frame itself, in order.
            client.sink, client.sink_now = sink, (ready, forward_now)
            client.sink_made = (ready_made, forward_made)
            while True:
                waiting = parked = asyncio.ensure_future(client.inbox.get())
                either: set[asyncio.Future[Any]] = {waiting, failed}
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if failed.done():
                    waiting.cancel()
                    raise failed.result()
                item = waiting.result()
                if item is CLOSED:
                    return
                if isinstance(item, ClientFrame):  # the reader hands them over itself
                    await sink(item)
        except TimeoutError:
            stalled = True  # the upstream stopped reading
        finally:
            client.sink = client.sink_now = client.sink_made = None

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
        to_client.flush()
        for task in (down, upw):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if writer is not None:  # the ids still batched, even when the relay is cancelled
            await writer.close()
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
    await close_within(up)
