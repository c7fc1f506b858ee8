"""A lean client for ``bench/sessions.py``: the load of ``bench/session_load.py`` at a
fraction of its CPU, so the load generator does not take the cores it measures.

The same sessions (the same clips, 20 ms appends at real-time pace, the probe once a
second, the same ``Observations``), sent and read another way:

* every append is framed once, as a masked WebSocket client text frame, under each of
  ``KEYS`` random mask keys drawn at start (RFC 6455 asks a fresh key per frame; a load
  generator on loopback only needs valid frames: a session takes the keys in turn);
* ONE ``Ticker`` paces every session: it wakes every ``step / PHASES`` and writes each
  due session's frames with ``transport.write``, no task or sleep per session. Each
  session sits in one of ``PHASES`` slots of the 20 ms (by its index), so the proxy
  gets its appends spread over the 20 ms as from clients started at different times;
* the reader is an ``asyncio.Protocol`` that scans the bytes for frame boundaries (the
  proxy's frames are unmasked and never fragmented: aiohttp's writer and
  ``proxy/ws_write.py`` write whole frames) and decodes only the frames the bench reads
  (speech started / stopped, the probe's error). A ping is answered with a pong.

The opening handshake is a minimal HTTP upgrade; the first frame must be
``session.created``, as with ``session_load.run_client``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from session_load import CHUNK_MS, GAP_S, PROBE_EVERY_S, Clips, Observations
from session_wire_read import FrameReader, client_frame

KEYS = 4
PHASES = 4


@dataclass
class WireClips:
    """``Clips`` framed: each frame under each of ``KEYS`` mask keys."""

    frames: list[list[tuple[bytes, ...]]]
    silence: tuple[bytes, ...]
    chunk_ms: int

    @classmethod
    def frame(cls, clips: Clips, chunk_ms: int = CHUNK_MS) -> WireClips:
        keys = [os.urandom(4) for _ in range(KEYS)]

        def each(text: str) -> tuple[bytes, ...]:
            return tuple(client_frame(text.encode(), k) for k in keys)

        return cls(
            [[each(f) for f in clip] for clip in clips.frames], each(clips.silence), chunk_ms
        )


class Session(FrameReader):
    """One client connection: the handshake, its frames read, and what the ticker sends."""

    def __init__(self, wire: WireClips, first_clip: int, obs: Observations, probe: str) -> None:
        super().__init__()
        self.wire, self.n, self.obs = wire, first_clip, obs
        self.slot = first_clip % PHASES
        self.probe = client_frame(probe.encode(), os.urandom(4)) if probe else b""
        self.t0 = 0.0
        self.k = 0  # frames sent
        self.pos = 0  # frame within the current clip and its silence
        self.next_due = 0.0
        self.next_probe = 0.0
        self.probe_sent: float | None = None
        self.gap = int(GAP_S * 1000 / wire.chunk_ms)
        # Audio time (ms) where each clip began, to tell which clip an event is about.
        self.starts: list[tuple[int, int]] = []

    def start(self, t0: float) -> None:
        self.t0 = self.next_due = t0
        self.next_probe = t0 + PROBE_EVERY_S * (self.n % 10) / 10
        self.starts.append((0, self.n % len(self.wire.frames)))

    def send_due(self, now: float, tick: float) -> None:
        """Every frame due by ``now`` or by the ``tick`` the ticker woke for (more than
        one if it came late). uvloop's timers count whole milliseconds and may wake the
        ticker up to one early: a frame due at that tick goes then, not a tick later."""
        wire, write = self.wire, self.transport.write
        step = wire.chunk_ms / 1000
        by = max(now, tick) + 1e-6  # (the grid's sums may differ in the last bits)
        while self.next_due <= by and not self.closed:
            if self.k % 10 == 0:  # sampled: the client's own lag, not a per-frame record
                self.obs.late_sends.append((now, max(0.0, now - self.next_due)))
            clip = wire.frames[self.n % len(wire.frames)]
            frame = clip[self.pos] if self.pos < len(clip) else wire.silence
            write(frame[self.k % KEYS])
            self.k += 1
            self.pos += 1
            if self.pos == len(clip) + self.gap:
                self.n, self.pos = self.n + 1, 0
                self.starts.append((self.k * wire.chunk_ms, self.n % len(wire.frames)))
            if now >= self.next_probe and self.probe_sent is None:
                self.probe_sent = time.perf_counter()
                write(self.probe)
                self.next_probe = now + PROBE_EVERY_S
            self.next_due = self.t0 + self.k * step

    # FrameReader's callbacks: only the frames the bench reads are decoded.
    def on_speech(self, payload: bytes, now: float) -> None:
        ev = json.loads(payload)
        kind = ev["type"].rsplit(".", 1)[1]
        at_ms = ev.get("audio_start_ms" if kind == "speech_started" else "audio_end_ms")
        if isinstance(at_ms, int) and self.t0:
            clip = next((c for s, c in reversed(self.starts) if s <= at_ms), -1)
            self.obs.vad[(kind, clip)].append((now, now - (self.t0 + at_ms / 1000)))

    def on_error(self, payload: bytes, now: float) -> None:
        if self.probe_sent is not None and json.loads(payload).get("type") == "error":
            self.obs.probes.append((now, now - self.probe_sent))
            self.probe_sent = None


class Ticker:
    """Paces every session's appends: one task, woken ``PHASES`` times per frame."""

    def __init__(self, chunk_ms: int = CHUNK_MS) -> None:
        self.every = chunk_ms / 1000 / PHASES
        self.origin = time.perf_counter()
        self.slots: list[list[Session]] = [[] for _ in range(PHASES)]

    def add(self, s: Session) -> None:
        """Start ``s`` at the next time the ticker wakes for its slot."""
        i = int((time.perf_counter() - self.origin) / self.every) + 1
        i += (s.slot - i) % PHASES
        s.start(self.origin + i * self.every)
        self.slots[s.slot].append(s)

    async def run(self, stop: asyncio.Event) -> None:
        i = 0
        while not stop.is_set():
            tick = self.origin + i * self.every
            delay = tick - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            slot = self.slots[i % PHASES]
            for s in slot:
                s.send_due(time.perf_counter(), tick)
            if any(s.closed for s in slot):
                slot[:] = [s for s in slot if not s.closed]
            i += 1


async def run_lean(
    ticker: Ticker,
    url: str,
    wire: WireClips,
    first_clip: int,
    obs: Observations,
    stop: asyncio.Event,
    probe: str,
    speak: bool = True,
) -> None:
    """``session_load.run_client`` with the lean client: one session until ``stop``."""
    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    s = Session(wire, first_clip, obs, probe)
    try:
        await asyncio.wait_for(
            loop.create_connection(lambda: s, parts.hostname, parts.port), timeout=60
        )
        key = base64.b64encode(os.urandom(16)).decode()
        s.handshake(f"{parts.path}?{parts.query}", parts.netloc, key)
        first = json.loads(await asyncio.wait_for(s.first, timeout=60))
        if first.get("type") != "session.created":
            obs.errors.append(f"first event {first.get('type')}")
            return
        obs.opened += 1
        if speak:
            ticker.add(s)
        stop_wait = asyncio.ensure_future(stop.wait())
        await asyncio.wait([stop_wait, s.lost], return_when=asyncio.FIRST_COMPLETED)
        stop_wait.cancel()
    except (TimeoutError, ConnectionError, OSError, ValueError) as exc:
        obs.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        s.close()
