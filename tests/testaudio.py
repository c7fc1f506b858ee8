"""Synthetic speech-like audio for the tests.

A voiced "vowel" (harmonics of ``f0`` shaped by two formants, with a syllable
rhythm) at conversational level passes the reference speech detector the way
real speech does; :func:`silence` and :func:`noise` do not.
"""

from __future__ import annotations

import numpy as np

from shim.audio import Int16Array


def vowel(
    duration_ms: int, *, rate_hz: int = 16000, f0: float = 140.0, level: float = 0.1
) -> Int16Array:
    n = rate_hz * duration_ms // 1000
    t = np.arange(n, dtype=np.float64) / rate_hz
    wave = np.zeros(n, dtype=np.float64)
    for harmonic in range(1, 30):
        freq = f0 * harmonic
        if freq >= rate_hz / 2:
            break
        gain = np.exp(-(((freq - 700.0) / 300.0) ** 2)) + 0.6 * np.exp(
            -(((freq - 1200.0) / 400.0) ** 2)
        )
        wave += (gain + 0.02) * np.sin(2.0 * np.pi * freq * t)
    syllables = 0.55 + 0.45 * np.sin(2.0 * np.pi * 4.0 * t - np.pi / 2)
    wave *= syllables
    peak = float(np.max(np.abs(wave))) or 1.0
    ramp = min(n // 2, rate_hz // 100)
    if ramp:
        envelope = np.ones(n)
        envelope[:ramp] = np.linspace(0.0, 1.0, ramp)
        envelope[-ramp:] = np.linspace(1.0, 0.0, ramp)
        wave *= envelope
    out: Int16Array = (wave / peak * level * np.sqrt(2.0) * 32767.0).astype(np.int16)
    return out


def silence(duration_ms: int, *, rate_hz: int = 16000) -> Int16Array:
    return np.zeros(rate_hz * duration_ms // 1000, dtype=np.int16)


def noise(
    duration_ms: int, *, rate_hz: int = 16000, level: float = 0.01, seed: int = 0
) -> Int16Array:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(rate_hz * duration_ms // 1000) * level * 32767.0).astype(np.int16)


def chunks(samples: Int16Array, *, rate_hz: int = 16000, chunk_ms: int = 100) -> list[bytes]:
    step = rate_hz * chunk_ms // 1000
    return [samples[i : i + step].astype("<i2").tobytes() for i in range(0, samples.size, step)]
