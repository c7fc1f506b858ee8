"""Audio in and out of ``talk``: WAV files at 24 kHz PCM16, and the microphone.

A source yields 20 ms frames at real-time pace; a file source is silent after its end,
so the conversation can go on until the answer is over.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soxr

RATE = 24000
FRAME_MS = 20
FRAME_BYTES = RATE * 2 * FRAME_MS // 1000


def read_wav(path: Path) -> bytes:
    """A WAV file as 24 kHz mono PCM16 (mixed down and resampled as needed)."""
    with wave.open(str(path)) as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: only 16-bit PCM WAV is supported")
        rate, channels = w.getframerate(), w.getnchannels()
        frames = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    samples = frames.reshape(-1, channels).mean(axis=1).astype(np.float32) / 32768.0
    if rate != RATE:
        samples = soxr.resample(samples, rate, RATE)
    return to_pcm16(samples)


def to_pcm16(samples: Any) -> bytes:
    clipped = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 32767 / 32768)
    return bytes((clipped * 32768.0).astype("<i2").tobytes())


def write_wav(path: Path, pcm: bytes, rate: int = RATE) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)


def overlay(base: bytes, clip: bytes, at_ms: int) -> bytes:
    """``clip`` mixed into ``base`` from ``at_ms`` (``base`` grows if the clip runs past it)."""
    start = RATE * at_ms // 1000
    a = np.frombuffer(base, dtype="<i2").astype(np.int32)
    b = np.frombuffer(clip, dtype="<i2").astype(np.int32)
    out = np.zeros(max(len(a), start + len(b)), dtype=np.int32)
    out[: len(a)] += a
    out[start : start + len(b)] += b
    return bytes(np.clip(out, -32768, 32767).astype("<i2").tobytes())


@dataclass
class FileSource:
    """A recording played as if spoken now: one frame every 20 ms of the loop clock."""

    pcm: bytes
    frames: int = 0
    start: float | None = None

    @property
    def ended(self) -> bool:
        return self.frames * FRAME_BYTES >= len(self.pcm)

    async def next_frame(self) -> bytes:
        loop = asyncio.get_running_loop()
        if self.start is None:
            self.start = loop.time()
        delay = self.start + self.frames * FRAME_MS / 1000 - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        chunk = self.pcm[self.frames * FRAME_BYTES : (self.frames + 1) * FRAME_BYTES]
        self.frames += 1
        return chunk.ljust(FRAME_BYTES, b"\0")

    def close(self) -> None:
        return None


def _sounddevice() -> Any:
    try:
        return importlib.import_module("sounddevice")
    except ImportError as exc:
        raise RuntimeError("--mic needs the sounddevice package (the [mic] extra)") from exc


class MicSource:
    """The default microphone through ``sounddevice`` (optional: ``pip install sounddevice``)."""

    ended = False

    def __init__(self) -> None:
        sd = _sounddevice()
        loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

        def on_audio(data: Any, frames: int, time: Any, status: Any) -> None:
            loop.call_soon_threadsafe(self.queue.put_nowait, bytes(data))

        self.stream = sd.RawInputStream(
            samplerate=RATE,
            channels=1,
            dtype="int16",
            blocksize=FRAME_BYTES // 2,
            callback=on_audio,
        )
        self.stream.start()

    async def next_frame(self) -> bytes:
        return await self.queue.get()

    def close(self) -> None:
        self.stream.stop()
        self.stream.close()


class Speaker:
    """The default output device: plays what the playback clock says is heard."""

    def __init__(self, rate: int = RATE) -> None:
        self.buffer = bytearray()
        self.lock = threading.Lock()

        def on_output(out: Any, frames: int, time: Any, status: Any) -> None:
            with self.lock:
                n = min(len(out), len(self.buffer))
                out[:n] = self.buffer[:n]
                del self.buffer[:n]
            out[n:] = b"\0" * (len(out) - n)

        self.stream = _sounddevice().RawOutputStream(
            samplerate=rate, channels=1, dtype="int16", callback=on_output
        )
        self.stream.start()

    def write(self, pcm: bytes) -> None:
        with self.lock:
            self.buffer += pcm

    def close(self) -> None:
        self.stream.stop()
        self.stream.close()
