"""The stand-in model's voice: what a reply sounds like and what it says.

A reply is the user's own turn audio, resampled from 16 kHz to the output rate
and looped to ``reply_ms`` (so a listener can tell which turn is being answered
and a test can check the audio really flowed), or a quiet tone when the turn
was silent.  The reply text is spread word by word over the audio chunks, with
``(text_chars, audio_end_ms)`` marks so truncation can cut it proportionally
(vLLM-Omni ``audio_text_marks``, ``protocol/realtime/items.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shim.audio import Int16Array, StreamResampler

#: Below this float RMS the turn audio counts as silent and the reply is a tone.
_SILENT_RMS = 1e-3
_TONE_HZ = 220.0
_TONE_LEVEL = 0.05
_FADE_MS = 8


@dataclass(frozen=True, slots=True)
class ReplyChunk:
    """One output chunk: PCM16 LE bytes, its words, and cumulative marks at its end."""

    pcm16: bytes
    text: str
    end_ms: int
    text_chars: int


@dataclass(frozen=True, slots=True)
class ReplyPlan:
    rate_hz: int
    chunks: tuple[ReplyChunk, ...]
    text: str

    @property
    def duration_ms(self) -> int:
        return self.chunks[-1].end_ms if self.chunks else 0


def reply_text(backend: str, heard_ms: float, number: int) -> str:
    return (
        f"I heard about {heard_ms / 1000.0:.1f} seconds of audio. "
        f"This is the reference {backend} backend, reply number {number}."
    )


def reply_audio(source_16k: Int16Array, *, rate_hz: int, reply_ms: int) -> Int16Array:
    """``reply_ms`` of audio at ``rate_hz``: the source looped, or a tone if it is silent."""
    total = max(1, round(reply_ms * rate_hz / 1000))
    source = _resample(source_16k, rate_hz)
    if source.size < rate_hz // 100 or _rms(source) < _SILENT_RMS:
        t = np.arange(total, dtype=np.float64) / rate_hz
        wave = _TONE_LEVEL * np.sin(2.0 * np.pi * _TONE_HZ * t)
        looped = (wave * 32767.0).astype(np.int16)
    else:
        looped = np.resize(source, total).astype(np.int16)
    return _fade(looped, rate_hz)


def plan_reply(
    source_16k: Int16Array, *, rate_hz: int, reply_ms: int, chunk_ms: int, text: str
) -> ReplyPlan:
    audio = reply_audio(source_16k, rate_hz=rate_hz, reply_ms=reply_ms)
    step = max(1, round(chunk_ms * rate_hz / 1000))
    bounds = list(range(0, audio.size, step))
    words = text.split()
    per_chunk: list[list[str]] = [[] for _ in bounds]
    for index, word in enumerate(words):
        per_chunk[index * len(bounds) // max(1, len(words))].append(word)
    chunks: list[ReplyChunk] = []
    chars = 0
    for index, start in enumerate(bounds):
        piece = audio[start : start + step]
        chunk_text = " ".join(per_chunk[index])
        if chunk_text and chars:
            chunk_text = " " + chunk_text
        chars += len(chunk_text)
        end_ms = int((start + piece.size) * 1000 / rate_hz)
        chunks.append(
            ReplyChunk(
                pcm16=piece.astype("<i2").tobytes(),
                text=chunk_text,
                end_ms=end_ms,
                text_chars=chars,
            )
        )
    return ReplyPlan(rate_hz=rate_hz, chunks=tuple(chunks), text=" ".join(words))


def _resample(samples: Int16Array, rate_hz: int) -> Int16Array:
    if samples.size == 0 or rate_hz == 16000:
        return samples
    resampler = StreamResampler(16000, rate_hz)
    head = resampler.process(samples)
    return np.concatenate([head, resampler.flush()]).astype(np.int16)


def _rms(samples: Int16Array) -> float:
    if samples.size == 0:
        return 0.0
    floats = samples.astype(np.float64) / 32768.0
    return float(np.sqrt(np.mean(floats * floats)))


def _fade(samples: Int16Array, rate_hz: int) -> Int16Array:
    n = min(samples.size // 2, rate_hz * _FADE_MS // 1000)
    if n <= 0:
        return samples
    ramp = np.linspace(0.0, 1.0, n, dtype=np.float64)
    out = samples.astype(np.float64)
    out[:n] *= ramp
    out[-n:] *= ramp[::-1]
    return out.astype(np.int16)
