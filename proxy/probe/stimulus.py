"""The speech the probe says: a WAV split into utterances, at the rates it is sent in.

The shipped ``data/speech.wav`` holds two short espeak-ng utterances (see
``data/README.md``): the first is the user's turn, the second is spoken over the
assistant. A ``--speech`` file may hold one or more; with one, it serves both.
Audio goes out as 24 kHz PCM16 in the realtime dialects and 16 kHz PCM16 in the
turn-based one (``docs/protocol.md``), resampled with soxr's streaming resampler.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from shim.audio import Int16Array, StreamResampler

REALTIME_RATE = 24000
TURN_RATE = 16000
_FRAME_MS = 20
_MIN_GAP_MS = 300
_MIN_UTTERANCE_MS = 300
_PAD_MS = 20


class StimulusError(ValueError):
    """The speech file cannot be used (not 16-bit PCM, no speech in it)."""


@dataclass(frozen=True, slots=True)
class Utterance:
    pcm24: Int16Array
    pcm16: Int16Array

    @property
    def duration_ms(self) -> int:
        return self.pcm24.size * 1000 // REALTIME_RATE


@dataclass(frozen=True, slots=True)
class Stimulus:
    source: str
    turn: Utterance
    overlap: Utterance
    utterances: int


def default_speech_path() -> Path:
    return Path(str(resources.files("proxy.probe") / "data" / "speech.wav"))


def _resample(samples: Int16Array, in_rate: int, out_rate: int) -> Int16Array:
    if in_rate == out_rate:
        return samples
    resampler = StreamResampler(in_rate, out_rate)
    out: Int16Array = np.concatenate([resampler.process(samples), resampler.flush()]).astype(
        np.int16
    )
    return out


def read_wav(path: Path) -> Int16Array:
    """Mono 24 kHz PCM16 from any 16-bit PCM WAV."""
    try:
        with wave.open(str(path), "rb") as w:
            if w.getsampwidth() != 2:
                raise StimulusError(f"{path}: speech must be 16-bit PCM")
            rate, channels = w.getframerate(), w.getnchannels()
            raw = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise StimulusError(f"{path}: not a PCM WAV file ({exc})") from None
    samples = np.frombuffer(raw, dtype="<i2").astype(np.int16)
    if channels > 1:
        samples = samples.reshape(-1, channels).mean(axis=1).astype(np.int16)
    return _resample(samples, rate, REALTIME_RATE)


def split_utterances(samples: Int16Array, rate: int = REALTIME_RATE) -> list[Int16Array]:
    """Speech runs separated by at least 300 ms of quiet, each at least 300 ms long."""
    frame = rate * _FRAME_MS // 1000
    n = samples.size // frame
    if n == 0:
        return []
    frames = samples[: n * frame].astype(np.float64).reshape(n, frame) / 32768.0
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    threshold = max(float(rms.max()) * 0.05, 1e-3)
    voiced = np.flatnonzero(rms > threshold)
    if voiced.size == 0:
        return []
    runs: list[list[int]] = [[int(voiced[0]), int(voiced[0])]]
    for index in voiced[1:]:
        if (index - runs[-1][1]) * _FRAME_MS < _MIN_GAP_MS:
            runs[-1][1] = int(index)
        else:
            runs.append([int(index), int(index)])
    pad = _PAD_MS // _FRAME_MS
    out: list[Int16Array] = []
    for first, last in runs:
        if (last - first + 1) * _FRAME_MS < _MIN_UTTERANCE_MS:
            continue
        lo, hi = max(0, first - pad) * frame, min(n, last + 1 + pad) * frame
        out.append(samples[lo:hi].copy())
    return out


def _utterance(pcm24: Int16Array) -> Utterance:
    return Utterance(pcm24=pcm24, pcm16=_resample(pcm24, REALTIME_RATE, TURN_RATE))


def load_stimulus(path: str | Path | None = None) -> Stimulus:
    source = Path(path) if path is not None else default_speech_path()
    utterances = split_utterances(read_wav(source))
    if not utterances:
        raise StimulusError(f"{source}: no speech found")
    turn = _utterance(utterances[0])
    overlap = _utterance(utterances[1]) if len(utterances) > 1 else turn
    return Stimulus(source=str(source), turn=turn, overlap=overlap, utterances=len(utterances))
