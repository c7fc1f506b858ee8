"""The load of ``bench/sessions.py``: clients streaming real speech at real-time pace.

Each client plays the dev corpus's clean speech clips into its microphone in 20 ms
``input_audio_buffer.append`` events, each clip followed by silence long enough for
the assistant's answer to finish (so the VAD decisions never depend on overlap), and
reads everything the proxy sends. Two delays are taken from what it receives:

* VAD lag: ``speech_started`` / ``speech_stopped`` carry the audio time they were
  decided about (``audio_start_ms`` / ``audio_end_ms``); the client knows when it sent
  that audio. The VAD is deterministic in audio time, so the same event of the same
  clip always comes the same time after its audio unless the proxy falls behind: the
  lag is the excess over the fastest the run ever saw for that (event, clip).
* event delay: once a second the client sends an event the proxy (or, in passthrough,
  the upstream) answers at once with an error; its round trip is how long an event
  waits in the proxy behind the audio of every session.

``run_client`` is the aiohttp client (``bench/sessions.py --client aiohttp``);
``bench/session_wire.py`` sends and reads the same sessions at less CPU.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import wave
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np

RATE = 24000
CHUNK_MS = 20
GAP_S = 2.5  # silence after each clip: the answer (reply_ms) ends inside it
PROBE_EVERY_S = 1.0
# The probe, per mode: an event answered at once with an error event.
PROBES = {
    # The proxy's own session events (proxy/emulated/session_controls.py).
    "emulated": '{"type":"session.event_ack","server_event_seq":-1}',
    # Relayed to the upstream, which answers item_not_found.
    "passthrough": '{"type":"conversation.item.retrieve","item_id":"probe-missing"}',
}


@dataclass
class Clips:
    """Each clip as ready-to-send append frames, plus a silence frame."""

    frames: list[list[str]]
    silence: str

    @classmethod
    def load(cls, corpus: Path, chunk_ms: int = CHUNK_MS, limit: int = 12) -> Clips:
        manifest = json.loads((corpus / "manifest.json").read_text())
        names = [
            c["file"]
            for c in manifest["clips"]
            if c["kind"] == "speech" and "noise" not in c and c["file"].endswith("_clean.wav")
        ][:limit]
        if not names:
            raise SystemExit(f"no clean speech clips in {corpus}")
        step = RATE * chunk_ms // 1000
        frames = []
        for name in names:
            with wave.open(str(corpus / name)) as w:
                assert w.getframerate() == RATE and w.getsampwidth() == 2
                pcm = w.readframes(w.getnframes())
            pcm += b"\0" * (-len(pcm) % (2 * step))
            frames.append([_append(pcm[i : i + 2 * step]) for i in range(0, len(pcm), 2 * step)])
        return cls(frames, _append(b"\0" * (2 * step)))


def _append(pcm: bytes) -> str:
    return '{"type":"input_audio_buffer.append","audio":"' + base64.b64encode(pcm).decode() + '"}'


@dataclass
class Observations:
    """What every client saw, stamped with perf_counter time."""

    # (event, clip) -> [(arrival, delay_s)]: the event's arrival minus its audio's send time
    vad: dict[tuple[str, int], list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    probes: list[tuple[float, float]] = field(default_factory=list)  # (arrival, rtt_s)
    late_sends: list[tuple[float, float]] = field(default_factory=list)  # the client's own lag
    errors: list[str] = field(default_factory=list)
    opened: int = 0

    def window(
        self, t0: float, t1: float, baseline: dict[tuple[str, int], float]
    ) -> dict[str, float | int | None]:
        lags = [
            d - baseline[key]
            for key, rows in self.vad.items()
            if key in baseline
            for at, d in rows
            if t0 <= at < t1
        ]
        rtts = [r for at, r in self.probes if t0 <= at < t1]
        late = [d for at, d in self.late_sends if t0 <= at < t1]
        return {
            "vad_decisions": len(lags),
            "vad_lag_p50_ms": _pct(lags, 50),
            "vad_lag_p99_ms": _pct(lags, 99),
            "probes": len(rtts),
            "event_delay_p50_ms": _pct(rtts, 50),
            "event_delay_p99_ms": _pct(rtts, 99),
            "client_send_late_p99_ms": _pct(late, 99),
        }

    def baseline(self) -> dict[tuple[str, int], float]:
        """The fastest each (event, clip) ever came: the proxy not behind at all."""
        return {key: min(d for _, d in rows) for key, rows in self.vad.items() if rows}


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)) * 1000, 1) if values else None


async def run_client(
    http: aiohttp.ClientSession,
    url: str,
    clips: Clips,
    first_clip: int,
    obs: Observations,
    stop: asyncio.Event,
    probe: str,
    chunk_ms: int = CHUNK_MS,
    speak: bool = True,
) -> None:
    """One session until ``stop``: speech and silence at real-time pace, or (``speak``
    False) an idle session that only opens."""
    try:
        async with http.ws_connect(url, max_msg_size=0, heartbeat=None) as ws:
            first = json.loads((await ws.receive(timeout=60)).data)
            if first.get("type") != "session.created":
                obs.errors.append(f"first event {first.get('type')}")
                return
            obs.opened += 1
            if not speak:
                await stop.wait()
                return
            await _stream(ws, clips, first_clip, obs, stop, probe, chunk_ms)
    except (aiohttp.ClientError, TimeoutError, ConnectionError) as exc:
        obs.errors.append(f"{type(exc).__name__}: {exc}")


async def _stream(
    ws: aiohttp.ClientWebSocketResponse,
    clips: Clips,
    first_clip: int,
    obs: Observations,
    stop: asyncio.Event,
    probe: str,
    chunk_ms: int,
) -> None:
    step = chunk_ms / 1000
    t0 = time.perf_counter()
    # Audio time (ms) where each clip began, to tell which clip an event is about.
    starts: list[tuple[int, int]] = []
    probe_sent: float | None = None

    async def reader() -> None:
        nonlocal probe_sent
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            data = msg.data
            now = time.perf_counter()
            # Only the few events the bench reads are parsed: the client must stay cheap.
            if "input_audio_buffer.speech_" in data[:120]:
                ev = json.loads(data)
                kind = ev["type"].rsplit(".", 1)[1]
                at_ms = ev.get("audio_start_ms" if kind == "speech_started" else "audio_end_ms")
                if isinstance(at_ms, int):
                    clip = next((c for s, c in reversed(starts) if s <= at_ms), -1)
                    obs.vad[(kind, clip)].append((now, now - (t0 + at_ms / 1000)))
            elif '"error"' in data[:80] and probe_sent is not None:
                if json.loads(data).get("type") == "error":
                    obs.probes.append((now, now - probe_sent))
                    probe_sent = None

    read = asyncio.create_task(reader())
    k = 0
    gap = int(GAP_S / step)
    next_probe = t0 + PROBE_EVERY_S * (first_clip % 10) / 10
    try:
        n = first_clip
        while not stop.is_set() and not read.done():
            frames = clips.frames[n % len(clips.frames)]
            starts.append((round(k * chunk_ms), n % len(clips.frames)))
            for frame in [*frames, *([clips.silence] * gap)]:
                due = t0 + k * step
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                now = time.perf_counter()
                if k % 10 == 0:  # sampled: the client's own lag, not a per-frame record
                    obs.late_sends.append((now, max(0.0, now - due)))
                await ws.send_str(frame)
                k += 1
                if now >= next_probe and probe_sent is None:
                    probe_sent = time.perf_counter()
                    await ws.send_str(probe)
                    next_probe = now + PROBE_EVERY_S
                if stop.is_set():
                    break
            n += 1
    finally:
        read.cancel()
