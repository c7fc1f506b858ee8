"""The audio primitives the stimuli are made of: espeak-ng speech, levels, filters, a
synthetic room, padding, speech spans and WAV output (24 kHz PCM16 mono).

Shared by ``bench/stimuli.py`` and ``bench/stimuli_heldout.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np
import soxr

RATE = 24000


def speak(text: str, voice: str, rate_wpm: int, pitch: int) -> np.ndarray:
    """espeak-ng speech, resampled to 24 kHz, as float32 in [-1, 1]."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise SystemExit("espeak-ng is required (apt-get install espeak-ng)")
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        argv = [exe, "-v", voice, "-s", str(rate_wpm), "-p", str(pitch), "-w", tmp.name, text]
        subprocess.run(argv, check=True, capture_output=True)
        with wave.open(tmp.name) as w:
            rate = w.getframerate()
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    audio = pcm.astype(np.float32) / 32768.0
    return soxr.resample(audio, rate, RATE).astype(np.float32)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) + 1e-12


def at_level(x: np.ndarray, dbfs: float) -> np.ndarray:
    return (x * (10 ** (dbfs / 20) / rms(x))).astype(np.float32)


def lowpass(x: np.ndarray, cutoff_hz: float) -> np.ndarray:
    spec = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(x.size, 1 / RATE)
    spec[freqs > cutoff_hz] *= 0.1
    return np.fft.irfft(spec, x.size).astype(np.float32)


def reverb(x: np.ndarray, rt60_s: float, rng: np.random.Generator) -> np.ndarray:
    """A synthetic room: exponentially decaying noise as the impulse response."""
    n = int(rt60_s * RATE)
    t = np.arange(n) / RATE
    ir = rng.standard_normal(n) * np.exp(-6.9 * t / rt60_s)
    ir[0] = 1.0
    ir /= np.sqrt(np.sum(ir**2))
    wet = np.convolve(x, ir)[: x.size]
    return wet.astype(np.float32)


def speech_spans(x: np.ndarray, floor_db: float = -35.0) -> list[list[int]]:
    """Voiced spans in ms from the clean signal's 20 ms energy, gaps < 200 ms merged."""
    hop = RATE // 50
    frames = x[: x.size // hop * hop].reshape(-1, hop)
    level = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-9)
    on = level > (level.max() + floor_db)
    spans: list[list[int]] = []
    for i, v in enumerate(on):
        if not v:
            continue
        ms = i * 20
        if spans and ms - spans[-1][1] < 200:
            spans[-1][1] = ms + 20
        else:
            spans.append([ms, ms + 20])
    return spans


def pad(x: np.ndarray, before_ms: int, total_ms: int | None = None) -> np.ndarray:
    head = np.zeros(RATE * before_ms // 1000, dtype=np.float32)
    out = np.concatenate([head, x])
    if total_ms is not None:
        want = RATE * total_ms // 1000
        out = np.pad(out, (0, max(0, want - out.size)))[:want]
    return out


def write_wav(path: Path, x: np.ndarray) -> None:
    pcm = np.clip(x * 32767, -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())
