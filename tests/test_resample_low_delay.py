"""The microphone's resampler to the VAD timeline: little delay, in step with soxr."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from shim.resample_low_delay import HELD_MS, LowDelayResampler


def chunked(rate: int, x: np.ndarray, chunk_ms: int = 20) -> tuple[np.ndarray, list[int]]:
    """Resampled chunk by chunk, and how many samples were out after each chunk."""
    r = LowDelayResampler(rate, 16000)
    step = rate * chunk_ms // 1000
    outs, counts, total = [], [], 0
    for i in range(0, x.size, step):
        y = r.process(x[i : i + step])
        total += y.size
        outs.append(y)
        counts.append(total)
    outs.append(r.flush())
    return np.concatenate(outs), counts


def tone(freq: float, rate: int, seconds: float = 1.0, amp: float = 8000.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.int16)


@pytest.mark.parametrize("rate", [8000, 22050, 24000, 44100, 48000])
def test_holds_back_only_a_few_milliseconds(rate: int) -> None:
    x = tone(440, rate)
    y, counts = chunked(rate, x)
    assert y.size == -(-x.size * 16000 // rate)  # every sample out after the flush
    step = rate // 50
    for n, out in enumerate(counts, start=1):
        fed = min(n * step, x.size)
        # At most HELD_MS of what was fed waits for what follows it.
        assert fed * 16000 / rate - out <= HELD_MS * 16


@pytest.mark.parametrize("rate", [8000, 24000, 48000])
def test_chunking_does_not_change_the_output(rate: int) -> None:
    x = np.random.default_rng(1).normal(0, 3000, rate).astype(np.int16)
    whole = LowDelayResampler(rate, 16000)
    one = np.concatenate([whole.process(x), whole.flush()])
    assert np.array_equal(chunked(rate, x, 20)[0], one)
    assert np.array_equal(chunked(rate, x, 7)[0], one)


def test_keeps_speech_band_and_time_as_soxr_does() -> None:
    rate = 24000
    for freq in (300.0, 1000.0, 4000.0):
        x = tone(freq, rate)
        ours = chunked(rate, x)[0].astype(np.float64)
        ref = soxr.resample(x.astype(np.float64), rate, 16000, "VHQ")
        mid = slice(1000, 15000)
        err = ours[mid] - ref[mid]
        # Same samples at the same times: no delay between the two, no gain change.
        assert np.sum(err**2) < 1e-4 * np.sum(ref[mid] ** 2)


def test_removes_what_would_alias() -> None:
    x = tone(10000.0, 24000)  # above 8 kHz: would fold to 6 kHz at 16 kHz
    y = chunked(24000, x)[0].astype(np.float64)[1000:15000]
    assert np.mean(y**2) < 1e-6 * 8000.0**2 / 2  # 60 dB down


def test_same_rate_passes_through() -> None:
    x = tone(440, 16000)
    r = LowDelayResampler(16000, 16000)
    assert np.array_equal(r.process(x), x)
    assert r.flush().size == 0


def test_24k_matrix_product_is_the_converter_to_one_lsb() -> None:
    """A 24 kHz microphone takes the converter's filter as a matrix product
    (shim/resample_polyphase.py): the same outputs at the same moments, whatever
    the chunking, each within 1 LSB (rarely one off: where float32 rounds the other way)."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(0, 6000, 48000), tone(440, 24000, amp=30000.0), np.zeros(500)])
    x = np.clip(x, -32768, 32767).astype(np.int16)
    converter = LowDelayResampler(24000, 16000)
    converter._poly = None  # libsamplerate's own loop
    ours = LowDelayResampler(24000, 16000)
    assert ours._poly is not None
    i, differ, total = 0, 0, 0
    while i < x.size:
        n = int(rng.integers(1, 1500))
        a, b = converter.process(x[i : i + n]), ours.process(x[i : i + n])
        i += n
        assert a.size == b.size  # returned at the same moment
        d = np.abs(a.astype(np.int32) - b)
        assert d.max(initial=0) <= 1
        differ, total = differ + int(np.count_nonzero(d)), total + a.size
    a, b = converter.flush(), ours.flush()
    assert a.size == b.size and np.abs(a.astype(np.int32) - b).max(initial=0) <= 1
    assert differ <= total // 1000  # 7 of 48,314 here, loud; ~5 per million on speech
