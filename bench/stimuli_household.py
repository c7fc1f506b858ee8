"""Household sounds (``bench/stimuli.py --variety household``): noises no other set has.

For checking, never for tuning: sounds a user's room makes that are not speech, some of
them voiced or tonal as speech is, at two levels each, 10 dB under the user's question
and 3 dB under it (a sound as loud as the user, nearly):

* ``siren``: a wailing tone and its harmonics; ``phone``: a two-tone ring, on and off;
  ``chords``: decaying piano-like chords;
* ``dog``: harmonic barks with a falling pitch; ``baby``: a wavering cry of harmonic
  bursts (voiced, at a child's pitch);
* ``knock``, ``clapping``, ``dishes``: impacts, a clap's bursts, ringing clatter;
* ``cough``: bursts of shaped noise; ``vacuum``: broadband noise over a motor's hum.

The question opens every case (``question.wav``, as in the other sets); the noises are
the cases. Burst positions, pitches and spacings come from the seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from stimuli_audio import RATE, at_level, lowpass, pad, speech_spans
from stimuli_heldout import say

SECONDS = 3.0
LEVELS_BELOW_USER_DB = (10, 3)

Rng = np.random.Generator


def band(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    spec = np.fft.rfft(x)
    f = np.fft.rfftfreq(x.size, 1 / RATE)
    spec[(f < lo) | (f > hi)] = 0
    return np.fft.irfft(spec, x.size).astype(np.float32)


def harmonic(f0: np.ndarray, harmonics: int, tilt: float = 1.0) -> np.ndarray:
    """A harmonic tone following the pitch track ``f0`` (Hz per sample)."""
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    out = np.zeros(f0.size)
    for h in range(1, harmonics + 1):
        out += np.sin(h * phase) / h**tilt
    return out


def _place(out: np.ndarray, burst: np.ndarray, at_s: float) -> None:
    i = int(at_s * RATE)
    m = min(burst.size, out.size - i)
    out[i : i + m] += burst[:m].astype(np.float32)


def siren(rng: Rng, t: np.ndarray) -> np.ndarray:
    centre, swing, rate = rng.uniform(750, 1000), rng.uniform(250, 400), rng.uniform(0.4, 0.8)
    return harmonic(centre + swing * np.sin(2 * np.pi * rate * t), 3)


def phone(rng: Rng, t: np.ndarray) -> np.ndarray:
    period = rng.uniform(0.8, 1.2)
    on = (t % period) < period / 2
    f1 = rng.choice([440.0, 480.0, 620.0])
    return on * (np.sin(2 * np.pi * f1 * t) + np.sin(2 * np.pi * (f1 + 40) * t))


def chords(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    step = t.size // 4
    tt = np.arange(step) / RATE
    for k in range(4):
        root = 196 * 2 ** (int(rng.integers(0, 8)) / 12)
        c = sum(
            np.sin(2 * np.pi * root * r * h * tt) / h**2 for r in (1, 1.26, 1.5) for h in (1, 2, 3)
        )
        _place(out, c * np.exp(-tt / 0.5), k * step / RATE)
    return out


def dog(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    for at in sorted(rng.uniform(0, SECONDS - 0.3, 4)):
        m = int(rng.uniform(0.12, 0.22) * RATE)
        tt = np.arange(m) / RATE
        f0 = rng.uniform(300, 500) * (1 + 0.3 * np.exp(-tt / 0.05))
        bark = harmonic(f0, 11) * np.abs(np.sin(np.pi * tt / tt[-1])) ** 0.5
        bark = bark + 0.3 * rng.standard_normal(m)
        _place(out, band(bark.astype(np.float32), 300, 3500), at)
    return out


def baby(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    for at, length in ((rng.uniform(0, 0.4), rng.uniform(0.6, 1.0)), (1.4, rng.uniform(0.8, 1.3))):
        m = int(length * RATE)
        tt = np.arange(m) / RATE
        f0 = (
            rng.uniform(420, 550)
            + 60 * np.sin(2 * np.pi * 6 * tt)
            + 80 * np.sin(np.pi * tt / length)
        )
        cry = harmonic(f0, 9, 1.2) * np.abs(np.sin(np.pi * tt / length)) ** 0.3
        _place(out, band(cry.astype(np.float32), 400, 5000), at)
    return out


def knock(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    for first in (rng.uniform(0.1, 0.6), rng.uniform(1.6, 2.2)):
        for k in range(3):
            m = int(0.05 * RATE)
            hit = rng.standard_normal(m) * np.exp(-np.arange(m) / (m / 6))
            _place(out, lowpass(hit.astype(np.float32), 1200), first + k * rng.uniform(0.18, 0.26))
    return out


def clapping(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    at = rng.uniform(0.0, 0.2)
    while at < SECONDS - 0.1:
        m = int(0.02 * RATE)
        clap = rng.standard_normal(m) * np.exp(-np.arange(m) / (m / 5))
        _place(out, band(clap.astype(np.float32), 800, 6000), at)
        at += rng.uniform(0.18, 0.3)
    return out


def dishes(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    tt = np.arange(int(0.3 * RATE)) / RATE
    for at in rng.uniform(0, SECONDS - 0.4, 9):
        f = rng.uniform(1500, 4500)
        ring = sum(np.sin(2 * np.pi * f * k * tt) for k in (1, 2.7, 5.4)) * np.exp(-tt / 0.07)
        _place(out, ring, at)
    return out


def cough(rng: Rng, t: np.ndarray) -> np.ndarray:
    out = np.zeros(t.size, np.float32)
    tt = np.arange(int(0.25 * RATE)) / RATE
    for at in sorted(rng.uniform(0, SECONDS - 0.3, 3)):
        burst = rng.standard_normal(tt.size) * np.exp(-tt / 0.06) * (1 - np.exp(-tt / 0.005))
        _place(out, band(burst.astype(np.float32), 300, 4000), at)
    return out


def vacuum(rng: Rng, t: np.ndarray) -> np.ndarray:
    hiss = band(rng.standard_normal(t.size).astype(np.float32), 100, 6000)
    hum = harmonic(np.full(t.size, rng.uniform(150, 250)), 3)
    return hiss / (np.std(hiss) + 1e-9) + 0.5 * hum


SOUNDS: dict[str, Callable[[Rng, np.ndarray], np.ndarray]] = {
    "siren": siren,
    "phone": phone,
    "chords": chords,
    "dog": dog,
    "baby": baby,
    "knock": knock,
    "clapping": clapping,
    "dishes": dishes,
    "cough": cough,
    "vacuum": vacuum,
}


def make_household(seed: int, add: Any) -> None:
    """Adds the set's clips through ``add(name, audio, **meta)``."""
    rng = np.random.default_rng(seed)
    user_db = -20.0
    ask, v = say("Could you tell me how long the pasta should boil?", rng)
    x = pad(at_level(ask, user_db), 300)
    add("question.wav", x, kind="question", speech_ms=speech_spans(x), voice=v, dbfs=user_db)
    t = np.arange(int(SECONDS * RATE)) / RATE
    for name, make in SOUNDS.items():
        sound = np.asarray(make(rng, t), dtype=np.float32)
        for below in LEVELS_BELOW_USER_DB:
            level = user_db - below
            add(
                f"noise_{name}_{below:02d}.wav",
                at_level(sound, level),
                kind="noise",
                noise=name,
                dbfs=level,
            )
