"""The client side of a session: read frames, validate them, write events in order.

Reading and writing each run in their own task with bounded queues, so a slow client
can neither block the session's logic nor grow the proxy's memory: when its outbound
queue is full the client is closed with 1008 (docs/protocol.md). Reading stops while
the inbox is full, and slows to the client's audio allowance (``proxy/client_limits.py``),
so a fast client is pushed back by its own socket."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import aiohttp
from aiohttp import web

from proxy.client_fields import FieldCaps
from proxy.client_frames import BadFrame, ClientFrame, parse_client_frame
from proxy.client_limits import InputRate, Lifetime
from proxy.client_made import SinkMade, made_taker
from proxy.client_outbox import ClientOutbox
from proxy.client_queue import FrameInbox
from proxy.client_watch import admit, event_id_of, too_long, watch_lifetime
from proxy.config import ServerConfig
from proxy.metrics import FrameTally, Metrics
from proxy.ws_close import close_or_cut
from proxy.ws_direct import tap_queue
from shim import wire
from shim.native_client import native_error

CLOSED = object()  # inbox sentinel: the client went away
GOODBYES = (1000, 1001)  # a client's own close codes for "done" (normal, going away)
BINARY_REFUSED = "binary frames are not accepted: send JSON text events"


class ClientChannel(ClientOutbox):
    def __init__(
        self,
        ws: web.WebSocketResponse,
        metrics: Metrics,
        inbox_size: int,
        outbox_frames: int,
        outbox_bytes: int,
        transport: asyncio.Transport | None = None,
        limits: ServerConfig | None = None,
    ) -> None:
        self._init_outbox(ws, transport, outbox_frames, outbox_bytes)
        self.metrics = metrics
        self._tally_in = FrameTally(metrics, "client_to_upstream")
        # Set by a consumer that takes frames from the reader itself (passthrough): no
        # queue, no task switch per frame; with it, what may go from the socket's callback:
        # a text (``_take``), a frame as it came (``proxy/client_made.py``).
        self.sink: Callable[[ClientFrame], Awaitable[None]] | None = None
        self.sink_now: tuple[Callable[[str], bool], Callable[[ClientFrame], None]] | None = None
        self.sink_made: SinkMade | None = None
        self.limits = limits or ServerConfig()
        self.inbox = FrameInbox(inbox_size, self.limits.pending_client_bytes)
        self.caps = FieldCaps.from_config(self.limits)
        self._json_limits = (self.limits.max_json_depth, self.limits.max_json_values, self.caps)
        self._tasks: list[asyncio.Task[None]] = []
        self.closed = asyncio.Event()
        self.close_code: int | None = None
        self.native = False  # a vLLM-Omni client: refused in its words and envelope
        self._loop = asyncio.get_running_loop()
        now = self._loop.time()
        self.rate = InputRate.from_config(self.limits, now)
        self.lifetime = Lifetime(self.limits, now)
        self._watch = partial(watch_lifetime, self.lifetime, self.send_error, self.end)
        self.ended_by_proxy: str | None = None  # why the proxy ended it itself: no grace
        # The client closed with a close frame of its own, 1000 or 1001 (a hang-up, not a
        # dropped connection, whose socket just ends): ``proxy/emulated/departures.py``.
        self.said_goodbye = False
        # The attached session's: what it owes the client goes before any close (held_ends.py).
        self.owed: Callable[[int], Awaitable[None]] | None = None
        # close() stopped the reader: the close, not the reader, tells the inbox CLOSED.
        self._reader_stopped = False

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._read(), name="client-read"),
            asyncio.create_task(self._write(), name="client-write"),
            asyncio.create_task(self._watch(), name="client-watch"),
        ]

    def end_by(self, at: float) -> None:
        """The session this client is attached to ends at ``at`` (loop time)."""
        if at < self.lifetime.ends_at:
            self.lifetime.ends_at = at
            if len(self._tasks) > 2 and not self._tasks[2].done():
                self._tasks[2].cancel()
                self._tasks[2] = asyncio.create_task(self._watch(), name="client-watch")

    async def end(self, why: str | None, code: int, reason: str, *error: str) -> None:
        """What the client is owed, the ``error``, the close (``why``: no grace)."""
        self.ended_by_proxy = why or self.ended_by_proxy
        await self._settle(code)
        if error:
            self.send_error(*error)
        await self.close(code, reason)

    async def _settle(self, code: int) -> None:
        owed, self.owed = self.owed, None  # once
        if owed is not None and not self.ws.closed and not self._slow:
            await owed(code)

    async def _read(self) -> None:
        tap, take, made = tap_queue(self.ws), self._take, made_taker(self)
        try:
            while True:
                # Only while this task waits with no frame in hand, for a direct sink:
                tap.arm(take if self.sink_now else None, made if self.sink_made else None)
                msg = await self.ws.receive()
                tap.tap = tap.raw = None
                if msg.type == aiohttp.WSMsgType.TEXT:
                    self._tally_in.add(len(msg.data))
                    if len(msg.data) > (limit := self.limits.max_frame_bytes):
                        self.metrics.client_errors.labels("frame_too_large").inc()
                        await self.end("frame_too_large", 1009, f"frame over {limit} bytes")
                        break
                    parsed = parse_client_frame(msg.data, *self._json_limits)
                    if isinstance(parsed, BadFrame):
                        code, words = (
                            parsed.native() if self.native else (parsed.code, parsed.message)
                        )
                        # vLLM-Omni names no event in its refusal of a frame (its words).
                        named = parsed.event_id if words == parsed.message else None
                        self.send_error(code, words, named, parsed.param)
                        continue
                    now = self._loop.time()
                    self.lifetime.heard(now)
                    if not self.rate.take(parsed.event, now):  # over: what charge says
                        cost = self.rate.cost(parsed.event)
                        if cost > self.rate.burst:  # more than the allowance ever holds
                            self.send_error(*too_long(cost, self.limits), event_id_of(parsed))
                            continue
                        verdict = self.rate.charge(cost, now)
                        if not await admit(verdict, self.limits, self.send_error, self.end):
                            break
                    if self.sink is None:
                        await self.inbox.put(parsed)
                    if self.sink is not None:  # set now, or while the put waited for room
                        await self._to_sink(parsed)
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    self.send_error("invalid_event", BINARY_REFUSED)
                else:  # closed, or an error (pings are answered by aiohttp)
                    if msg.type == aiohttp.WSMsgType.CLOSE and msg.data in GOODBYES:
                        self.said_goodbye = True
                    break
        finally:
            tap.tap = tap.raw = None
            self._tally_in.flush()
            if not self._reader_stopped:  # else close() says CLOSED once its frame is out
                if self.ended_by_proxy is None:  # else the watcher may be the one closing
                    self._tasks[2].cancel()
                self.close_code = self.ws.close_code
                # Cancelled (``stop``), its inbox is read by no one: no waiting for room.
                if not (self.inbox.full() and (me := asyncio.current_task()) and me.cancelling()):
                    await self.inbox.put(CLOSED)

    def _take(self, text: str) -> bool:
        """The reader's work on a text frame, in the socket's callback if all can be done now."""
        now_sink, n, now = self.sink_now, len(text), self._loop.time()
        if now_sink is None or self.sink is None or self._reader_stopped or not self.inbox.empty():
            return False
        if n > self.limits.max_frame_bytes or not now_sink[0](text):
            return False
        parsed = parse_client_frame(text, *self._json_limits)
        if isinstance(parsed, BadFrame) or not self.rate.take(parsed.event, now):
            return False  # the reader answers, or slows down
        self._tally_in.add(n)
        self.lifetime.heard(now)
        now_sink[1](parsed)
        return True

    async def _to_sink(self, frame: ClientFrame) -> None:
        """``frame`` to the sink, after what the inbox holds (put as the sink was set)."""
        queued = False
        while self.sink is not None and not self.inbox.empty():
            item = self.inbox.get_nowait()
            assert isinstance(item, ClientFrame)
            queued = queued or item is frame
            await self.sink(item)
        if self.sink is not None and not queued:
            await self.sink(frame)

    async def _drop_slow(self) -> None:
        """The client stopped reading: let go of what it did not take, and close it."""
        self.metrics.client_errors.labels("slow_consumer").inc()
        self.ended_by_proxy = "slow_consumer"  # a policy close: no grace holds a slot
        if len(self._tasks) > 1:
            self._tasks[1].cancel()  # the writer
        self._out.clear()
        self._out_bytes = 0
        self._drained.set()
        # Its socket is full too: a close frame may not get through, then it is cut.
        await close_or_cut(self.ws, self._transport, 1008, b"client too slow", 1.0)
        self.closed.set()

    def send_error(
        self,
        code: str,
        message: str,
        event_id: str | None = None,
        param: str | None = None,
        *,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """An ``error`` event; ``extra``: more top-level fields (a proxy extension)."""
        self.metrics.client_errors.labels(code).inc()
        event = wire.error(code, message, event_id=event_id, param=param) | (extra or {})
        self.send_event(native_error(event) if self.native else event)

    async def close(self, code: int, reason: str) -> None:
        await self._settle(code)
        if not self.ws.closed and not self._slow:
            await self.flush()
            stopped = await self._stop_reader()
            await close_or_cut(self.ws, self._transport, code, reason.encode()[:120], 2.0)
            self.close_code = self.ws.close_code
            if stopped:  # the reader's last word, once the close frame is out
                try:
                    self.inbox.put_nowait(CLOSED)
                except asyncio.QueueFull:
                    self._tasks.append(asyncio.create_task(self.inbox.put(CLOSED)))
        self.closed.set()

    async def _stop_reader(self) -> bool:
        """Stop the reader first (True if done here): aiohttp, closed while a reader waits,
        drops the socket with the client's frames unread (1006); it must not say CLOSED."""
        reader = self._tasks[0] if self._tasks else None
        if reader is None or reader.done() or reader is asyncio.current_task():
            return False
        self._reader_stopped = True
        reader.cancel()
        await asyncio.wait({reader}, timeout=1.0)
        return True

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # their ends, not their errors: a cancellation of ours stays ours
            await asyncio.wait(self._tasks)
            _ = [t.exception() for t in self._tasks if not t.cancelled()]  # (as awaited)
