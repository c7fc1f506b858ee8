"""A small realtime WebSocket client over aiohttp that speaks both dialects.

It records every event with its arrival time (loop clock), follows responses
(``tracks.Tracker``), tracks ``server_event_seq`` and acknowledges it
(``session.event_ack``, as vLLM-Omni duplex clients do) and can stop reading on
purpose, which is how the backpressure check plays a slow client. Opening a
session (both handshake styles, ``?duplex=1`` refusal, resume) is in
``handshake.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from proxy.probe.tracks import AUDIO_BYTES, AUDIO_DELTAS, Tracker, b64_size
from shim.audio import AudioFormat

ACK_EVERY = 8


def error_message(event: dict[str, Any]) -> str:
    err = event.get("error")
    if isinstance(err, dict):
        return str(err.get("message", ""))
    return str(err) if err is not None else ""


def error_event_id(event: dict[str, Any]) -> str | None:
    err = event.get("error")
    value = err.get("event_id") if isinstance(err, dict) else None
    return value if isinstance(value, str) else None


@dataclass(slots=True)
class Event:
    t: float
    type: str
    data: dict[str, Any]
    size: int


@dataclass(slots=True)
class SessionInfo:
    """What ``session.created`` said, in whichever dialect."""

    dialect: str  # "realtime" | "turn"
    created: dict[str, Any]
    session_id: str | None = None
    resume_token: str | None = None
    capabilities: dict[str, Any] | None = None
    output_rate: int = 24000
    #: The float input the session declares (``pcm_f32le``, as a PersonaPlex route's
    #: defaults do); None: the probe speaks PCM16 at 24 kHz.
    input_format: AudioFormat | None = None
    url: str = ""
    duplex_refused: dict[str, Any] | None = None
    update_error: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


class ProbeConnection:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse, url: str, *, record: bool = True):
        self.ws = ws
        self.url = url
        self.record = record
        # A connection that took a session over with ``session.resume`` (no session.created).
        self.resumed = False
        self.loop = asyncio.get_running_loop()
        self.events: list[Event] = []
        self.info: SessionInfo | None = None
        self.tracker = Tracker("realtime")
        self.seqs: list[int] = []
        self.event_ids: list[str] = []
        self.frames = 0
        self.bytes = 0
        self.errors: list[Event] = []
        self.close_code: int | None = None
        self.close_reason: str = ""
        self.closed = asyncio.Event()
        #: Acknowledge sequenced events (vLLM-Omni ``DuplexClient`` acks them all).
        self.acking = True
        self._acked = 0
        self._unacked = 0
        self._reading = asyncio.Event()
        self._reading.set()
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read(), name="probe-reader")

    # ---- time and state ----

    def now(self) -> float:
        return self.loop.time()

    @property
    def last_seq(self) -> int:
        return self.seqs[-1] if self.seqs else 0

    def adopt(self, info: SessionInfo) -> None:
        """The session is open: from now on events are read in its dialect."""
        self.info = info
        tracker = Tracker(info.dialect, info.output_rate)
        for event in self.events:
            tracker.feed(event.t, event.type, event.data)
        self.tracker = tracker

    # ---- reading ----

    def pause_reading(self) -> None:
        """Stop taking frames off the socket (aiohttp then stops reading the transport)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    async def _read(self) -> None:
        try:
            while True:
                await self._reading.wait()
                msg = await self.ws.receive()
                if msg.type == aiohttp.WSMsgType.TEXT:
                    await self._on_text(msg.data)
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    self.frames += 1
                    self.bytes += len(msg.data)
                else:
                    if msg.type == aiohttp.WSMsgType.CLOSE and isinstance(msg.extra, str):
                        self.close_reason = msg.extra
                    break
        except (aiohttp.ClientError, ConnectionError, RuntimeError):
            pass
        finally:
            self.close_code = self.ws.close_code
            self.closed.set()
            self._changed.set()

    async def _on_text(self, text: str) -> None:
        t = self.now()
        self.frames += 1
        self.bytes += len(text)
        try:
            event = orjson.loads(text)
        except orjson.JSONDecodeError:
            return
        if not isinstance(event, dict):
            return
        kind = str(event.get("type"))
        seq = event.get("server_event_seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            self.seqs.append(seq)
            self._unacked += 1
        event_id = event.get("event_id")
        if isinstance(event_id, str):
            self.event_ids.append(event_id)
        if kind in AUDIO_DELTAS:
            # Keep the size, drop the samples: traces stay small.
            for key in ("delta", "audio"):
                value = event.get(key)
                if isinstance(value, str):
                    event[key] = ""
                    event[AUDIO_BYTES] = b64_size(value)
        self.tracker.feed(t, kind, event)
        record = Event(t, kind, event, len(text))
        if kind == "error":
            self.errors.append(record)
        if self.record:
            self.events.append(record)
        self._changed.set()
        if (
            self.acking
            and self.info is not None
            and self._unacked
            and (self._unacked >= ACK_EVERY or kind == "response.done")
        ):
            await self.ack()

    async def ack(self) -> None:
        if self.last_seq > self._acked:
            self._acked = self.last_seq
            self._unacked = 0
            await self.send({"type": "session.event_ack", "server_event_seq": self._acked})

    # ---- waiting ----

    async def wait_until(self, condition: Callable[[], bool], within: float) -> bool:
        """Re-check ``condition`` on every event (and every 50 ms) for ``within`` seconds."""
        deadline = self.now() + within
        while True:
            if condition():
                return True
            remaining = deadline - self.now()
            if remaining <= 0:
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.05))

    async def wait_for(
        self, match: Callable[[Event], bool], within: float, since: int = 0
    ) -> Event | None:
        """The first recorded event from index ``since`` that ``match``es."""
        found: list[Event] = []
        index = since

        def scan() -> bool:
            nonlocal index
            while index < len(self.events):
                event = self.events[index]
                index += 1
                if match(event):
                    found.append(event)
                    return True
            return self.closed.is_set()

        await self.wait_until(scan, within)
        return found[0] if found else None

    # ---- sending ----

    async def send(self, event: dict[str, Any]) -> bool:
        if self.ws.closed:
            return False
        try:
            await self.ws.send_str(orjson.dumps(event).decode())
        except (aiohttp.ClientError, ConnectionError, RuntimeError):
            return False
        return True

    # ---- ending ----

    def drop(self) -> None:
        """Lose the connection as a network would: no close frame, nothing more sent."""
        sock = self.ws.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    async def close(self, *, say_goodbye: bool = True) -> None:
        """End the session: ``session.close`` where the endpoint keeps sessions, then close."""
        keeps = (self.info is not None and bool(self.seqs)) or self.resumed
        if say_goodbye and not self.ws.closed and keeps:
            await self.send({"type": "session.close"})
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.close(), 2.0)
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
