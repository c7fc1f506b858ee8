"""What a client is sent, in order: one bounded queue and its writer task, or a
direct write from the caller's task when nothing waits before it.

A client that stops reading fills the queue: past its frames or bytes it is closed
with 1008 (docs/protocol.md). ``ClientChannel`` (``proxy/client_io.py``) mixes this in
and says how such a client is dropped (``_drop_slow``)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import deque
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from proxy.ws_direct import DIRECT_MAX_BYTES, fits_direct, made_writer, text_writer


def own_event_id() -> str:
    """An ``event_id`` for an event the proxy sends outside a session's log (its own
    errors and notices): GA types every server event with one, and vLLM-Omni's duplex
    server mints its own so (``event_`` and a uuid4's hex)."""
    return f"event_{uuid.uuid4().hex}"


class ClientOutbox:
    ws: web.WebSocketResponse

    def _init_outbox(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport | None,
        max_frames: int,
        max_bytes: int,
    ) -> None:
        self.ws = ws
        self._out: deque[str | bytes] = deque()
        self._out_bytes = 0
        self._max_frames, self._max_bytes = max_frames, max_bytes
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._finishing = self._slow = False
        self._transport = transport
        self._write_text, self._write_made = text_writer(ws), made_writer(ws)  # None: off

    async def _drop_slow(self) -> None:
        """The client stopped reading (the queue is past its bounds): close it."""
        raise NotImplementedError

    async def _write(self) -> None:
        while True:
            while not self._out:
                self._drained.set()
                if self._finishing:
                    return
                self._wake.clear()
                await self._wake.wait()
            item = self._out.popleft()
            self._out_bytes -= len(item)
            try:
                send = self.ws.send_bytes if isinstance(item, bytes) else self.ws.send_str
                await send(item)  # type: ignore[arg-type]
            except (ConnectionError, RuntimeError, aiohttp.ClientError):
                self._out.clear()
                self._drained.set()
                return

    async def send_now(self, text: str) -> bool:
        """``send_text``, written from the caller's task if nothing is queued and it fits now."""
        t, busy = self._transport, self._out or self._slow or self._finishing or self.ws.closed
        if busy or t is None or t.get_write_buffer_size() or not fits_direct(text):
            return self.send_text(text)
        try:
            await self.ws.send_str(text)
        except (ConnectionError, RuntimeError, aiohttp.ClientError):
            return False
        return True

    def write_now(self, text: str) -> bool:
        """``send_now``'s direct write, no coroutine (False: not written, send it as usual)."""
        t, busy = self._transport, self._out or self._slow or self._finishing or self.ws.closed
        if busy or t is None or self._write_text is None or not fits_direct(text):
            return False
        return not t.get_write_buffer_size() and self._write_text(text)

    def write_frame_now(self, frame: bytes) -> bool:
        """``write_now`` of a whole frame already made (an upstream's, as it came)."""
        t, w = self._transport, self._write_made
        if self._out or self._slow or self._finishing or self.ws.closed or t is None or w is None:
            return False
        return len(frame) <= DIRECT_MAX_BYTES and not t.get_write_buffer_size() and w(frame)

    def send_text(self, text: str | bytes) -> bool:
        """Queue a frame; False if the client is too slow (past frames or bytes: 1008).
        The bounds are on what waits: a frame queued when none waits is always taken,
        however big (one upstream event may be bigger than the bytes' bound)."""
        if self.ws.closed or self._slow or self._finishing:
            return False
        waiting = bool(self._out)
        self._out.append(text)
        self._out_bytes += len(text)
        self._drained.clear()
        if waiting and (len(self._out) > self._max_frames or self._out_bytes > self._max_bytes):
            self._slow = True
            asyncio.get_running_loop().create_task(self._drop_slow())
            return False
        self._wake.set()
        return True

    def send_event(self, event: dict[str, Any]) -> bool:
        """An event of the proxy's own; one with no ``event_id`` gets one."""
        if "event_id" not in event:
            event = {"event_id": own_event_id(), **event}
        return self.send_text(orjson.dumps(event).decode())

    async def flush(self, within_s: float = 2.0) -> None:
        """Wait (bounded) until queued frames are written, and stop taking new ones."""
        self._finishing = True
        self._wake.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within_s):  # a scope: a cancellation stays the caller's
                await self._drained.wait()
