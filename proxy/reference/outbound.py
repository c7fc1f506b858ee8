"""One socket's ordered writer: synchronous enqueue, one task drains to the wire.

The session logic emits events synchronously (no await between deciding and
sending, so nothing interleaves); this writer keeps wire order equal to emit
order and is where a slow consumer is noticed.  A client that stops reading
blocks ``send_str`` (aiohttp waits for the transport to drain); the queue then
grows, and past ``max_bytes`` the client is dropped -- the transport aborted,
as a dead peer would be -- unless the ``unbounded_buffer`` fault is on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from proxy.reference.wire import dumps


@dataclass(frozen=True, slots=True)
class _Close:
    code: int
    reason: str


class Outbound:
    __slots__ = (
        "_closing",
        "_items",
        "_max_bytes",
        "_on_drop",
        "_queued_bytes",
        "_task",
        "_transport",
        "_wake",
        "_ws",
        "dropped",
    )

    def __init__(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport | None,
        *,
        max_bytes: int | None,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        self._ws = ws
        self._transport = transport
        self._max_bytes = max_bytes
        self._on_drop = on_drop
        self._items: deque[str | _Close] = deque()
        self._queued_bytes = 0
        self._wake = asyncio.Event()
        self._closing = False
        self.dropped = False
        self._task = asyncio.create_task(self._run(), name="reference-outbound")

    @property
    def queued_bytes(self) -> int:
        return self._queued_bytes

    @property
    def open(self) -> bool:
        return not (self._closing or self.dropped)

    def set_on_drop(self, on_drop: Callable[[], None] | None) -> None:
        self._on_drop = on_drop

    def send(self, payload: Mapping[str, object]) -> None:
        self.send_text(dumps(payload))

    def send_text(self, text: str) -> None:
        if not self.open:
            return
        self._items.append(text)
        self._queued_bytes += len(text)
        self._wake.set()
        if self._max_bytes is not None and self._queued_bytes > self._max_bytes:
            self.abort()

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Send what is queued, then a close frame."""
        if not self.open:
            return
        self._closing = True
        self._items.append(_Close(code, reason))
        self._wake.set()

    def abort(self) -> None:
        """Drop the connection without a close frame (a dead peer, a slow consumer)."""
        if self.dropped:
            return
        self.dropped = True
        self._items.clear()
        self._queued_bytes = 0
        if self._transport is not None:
            self._transport.abort()
        self._task.cancel()
        if self._on_drop is not None:
            on_drop, self._on_drop = self._on_drop, None
            on_drop()

    async def finish(self, within_s: float = 5.0) -> None:
        """End the writer: a queued close (and what precedes it) gets ``within_s`` to go out."""
        if self._closing and not self.dropped:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), within_s)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            while not self._items:
                self._wake.clear()
                await self._wake.wait()
            item = self._items.popleft()
            if isinstance(item, _Close):
                with contextlib.suppress(Exception):
                    await self._ws.close(code=item.code, message=item.reason.encode("utf-8"))
                return
            self._queued_bytes -= len(item)
            try:
                await self._ws.send_str(item)
            except (ConnectionError, RuntimeError):
                self.abort()
                return
