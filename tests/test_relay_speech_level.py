"""An append's level as the GA relay reads it (``shim/dialects/relay_context_lock.py``,
``speech``): the PCM16 path's integer sum of squares gives the same float64 rms, bit
for bit, as numpy's float mean it replaced, so every append is judged silence or not
exactly as before, at the threshold too."""

from __future__ import annotations

import numpy as np
import pytest

from shim.audio import PCM16, PCM_F32, AudioFormat
from shim.dialects import relay_context_lock
from shim.dialects.relay_context_lock import SILENCE_RMS, speech

RNG = np.random.default_rng(20261202)


def float_rms(raw: bytes) -> float:
    """The level as ``speech`` measured it before (numpy's float path)."""
    samples = np.frombuffer(raw, dtype="<i2").astype(np.float64) / 32768.0
    return float(np.sqrt(np.mean(np.square(samples))))


def appends() -> list[bytes]:
    out: list[bytes] = []
    for n in (1, 2, 3, 160, 320, 479, 480, 960, 4800, 48000):
        for peak in (0, 1, 3, 40, 98, 99, 100, 101, 300, 3000, 32767):
            out.append(RNG.integers(-peak, peak + 1, n).astype("<i2").tobytes())
    out.append(np.full(48000, -32768, dtype="<i2").tobytes())  # the largest square
    out.append(np.full(7, 32767, dtype="<i2").tobytes())
    out.append(np.zeros(480, dtype="<i2").tobytes())
    return out


def at_the_threshold() -> list[bytes]:
    """Appends whose rms sits a rounding away from ``SILENCE_RMS``: a constant level
    a sample or two either side of it, then single samples nudged one step."""
    out: list[bytes] = []
    for n in (320, 480, 641, 960):
        for _ in range(40):
            noise = RNG.standard_normal(n)
            noise *= SILENCE_RMS * 32768 / np.sqrt(np.mean(np.square(noise)))
            base = np.round(noise).astype(np.int64)
            for i in RNG.integers(0, n, 6):
                for step in (-1, 0, 1):
                    pcm = base.copy()
                    pcm[i] += step
                    out.append(np.clip(pcm, -32768, 32767).astype("<i2").tobytes())
    return out


@pytest.mark.parametrize("cases", [appends, at_the_threshold], ids=["spread", "threshold"])
def test_the_integer_level_is_numpys_float_level_bit_for_bit(cases: object) -> None:
    assert callable(cases)
    raws = cases()
    crossing = 0
    for raw in raws:
        exact = float_rms(raw)
        assert relay_context_lock._pcm16_rms(raw) == exact, len(raw)
        assert speech(raw, AudioFormat(PCM16, 24000)) is bool(exact >= SILENCE_RMS)
        for rms in (exact, np.nextafter(exact, 0.0), np.nextafter(exact, 1.0)):
            # Its own level as the threshold: equal counts as speech, one step above not.
            assert speech(raw, AudioFormat(PCM16, 16000), float(rms)) is bool(exact >= rms)
        crossing += exact >= SILENCE_RMS
    assert 0 < crossing < len(raws)  # both sides of the threshold were tried


def test_odd_short_and_float_appends_are_read_as_before() -> None:
    assert speech(b"", AudioFormat(PCM16, 24000)) is True
    assert speech(b"\x01", AudioFormat(PCM16, 24000)) is True
    assert speech(b"\x00\x00\x01", AudioFormat(PCM16, 24000)) is True
    quiet = np.full(480, 0.001, dtype="<f4").tobytes()
    loud = np.full(480, 0.01, dtype="<f4").tobytes()
    assert speech(quiet, AudioFormat(PCM_F32, 24000)) is False
    assert speech(loud, AudioFormat(PCM_F32, 24000)) is True
