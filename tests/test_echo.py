"""Echo suppression: the assistant's own voice must not barge in; the user's must.

Echo is made the way it happens: the 24 kHz audio the proxy sent plays on the
client, leaks into its microphone attenuated and late (with playback jitter), and
comes back at 24 kHz; the proxy resamples it to 16 kHz like any mic audio. So the
delays are fractional at 16 kHz, as in life.
"""

from __future__ import annotations

import json
import zlib
from functools import cache

import numpy as np
import pytest

from proxy.vad import VadRunner
from shim.audio import Float32Array, Int16Array, float_to_int16, int16_to_float
from shim.echo import EchoSuppressor
from shim.vad_gate import SpeechStarted, VadGate, VadParams
from tests.corpus import CORPUS, load24k, needs_corpus, to16k

RATE = 16000
CHUNK = 320  # 20 ms of mic per process() call


# -- mechanics, on synthetic signals -------------------------------------------


def noise_bursts(n: int, seed: int) -> Int16Array:
    """Speech-like far audio: noise bursts with pauses, about -20 dBFS."""
    rng = np.random.default_rng(seed)
    env = np.repeat(rng.random(n // 1600 + 1) > 0.3, 1600)[:n]
    return float_to_int16(0.1 * rng.standard_normal(n) * env)


def run(es: EchoSuppressor, mic: Int16Array, chunk: int = CHUNK) -> Float32Array:
    return np.concatenate([es.process(mic[i : i + chunk], i) for i in range(0, mic.size, chunk)])


@pytest.mark.parametrize("chunk", [333, RATE])  # small calls, and one of many frames
def test_passthrough_without_far_audio_is_exact_and_delayed_by_latency(chunk: int) -> None:
    mic = noise_bursts(RATE, 1)
    es = EchoSuppressor()
    out = run(es, mic, chunk=chunk)
    assert out.size == mic.size
    lat = es.latency
    np.testing.assert_allclose(out[lat:], int16_to_float(mic)[:-lat], atol=1e-6)
    np.testing.assert_allclose(out[:lat], 0.0, atol=1e-6)
    assert es.delay is None


@pytest.mark.parametrize("deltas", [False, True])
def test_locks_delay_and_gain_and_removes_a_clean_echo(deltas: bool) -> None:
    far = noise_bursts(3 * RATE, 2)
    delay = 2345  # 146.6 ms
    mic = np.zeros_like(far)
    mic[delay:] = (far[:-delay].astype(np.float32) * 0.3).astype(np.int16)
    es = EchoSuppressor()
    if deltas:  # as the proxy relays them: 40 ms pieces, ahead of playback, one late
        pieces = [(lo, far[lo : lo + 640]) for lo in range(0, far.size, 640)]
        pieces[3], pieces[4] = pieces[4], pieces[3]
        for at, piece in pieces:
            es.add_far(piece, at)
    else:
        es.add_far(far, 0)
    out = run(es, mic)
    assert es.delay == delay
    assert es.gain == pytest.approx(0.3, abs=0.01)
    tail = slice(RATE, None)  # after the first second
    erle = 10 * np.log10(np.sum(int16_to_float(mic)[tail] ** 2) / np.sum(out[tail] ** 2))
    assert erle > 30


def test_the_subtracted_copy_is_dropped_once_subtraction_stops() -> None:
    """After the echo's last subtracted sample has been framed, the subtracted copy of
    the microphone equals the microphone: it is not kept (nor concatenated per call)."""
    far = noise_bursts(RATE, 2)
    delay = 1600
    mic = np.zeros(3 * RATE, np.int16)
    mic[delay : delay + far.size] = (far.astype(np.float32) * 0.3).astype(np.int16)
    mic[2 * RATE :] = noise_bursts(RATE, 6)  # the user, once the echo is over
    es = EchoSuppressor()
    es.add_far(far, 0)
    run(es, mic[: RATE + delay])
    assert es.delay == delay
    assert es._rbuf is not None  # something was subtracted, still being framed
    run_from = RATE + delay
    for i in range(run_from, mic.size, CHUNK):
        es.process(mic[i : i + CHUNK], i)
    assert es._rbuf is None


def test_far_audio_without_echo_passes_the_mic() -> None:
    """A client with its own echo cancellation: far audio plays, no echo comes back."""
    far = noise_bursts(2 * RATE, 3)
    user = noise_bursts(2 * RATE, 4)  # unrelated to far
    es = EchoSuppressor()
    es.add_far(far, 0)
    out = run(es, user)
    assert es.delay is None
    lat = es.latency
    np.testing.assert_allclose(out[lat:], int16_to_float(user)[:-lat], atol=1e-6)


def test_far_active_covers_the_delay_range() -> None:
    es = EchoSuppressor(max_delay_ms=400)
    es.add_far(np.full(1600, 1000, np.int16), 10_000)  # 100 ms at mic sample 10000
    assert not es.far_active(0, 9_000)
    assert es.far_active(9_000, 10_001)
    assert es.far_active(11_000, 11_100)
    assert es.far_active(11_600 + 6_399, 20_000)  # echo can still arrive 400 ms later
    assert not es.far_active(11_600 + 6_400, 20_000)
    es.add_far(np.zeros(1600, np.int16), 30_000)  # silence plays as nothing
    assert not es.far_active(30_000, 31_600)


def test_clear_far_forgets_audio_after_a_barge_in() -> None:
    es = EchoSuppressor()
    es.add_far(np.full(RATE * 10, 1000, np.int16), 0)  # 10 s, mostly still ahead
    run(es, np.zeros(RATE, np.int16))
    assert es.far_active(RATE, RATE + 1)
    es.clear_far(RATE + 800)
    assert es.far_active(RATE, RATE + 1)  # played before the cut
    assert not es.far_active(RATE + 800 + es.max_delay, RATE * 10)


def test_memory_is_bounded() -> None:
    es = EchoSuppressor(max_ahead_s=5.0)
    ring = es.far.ring_bytes
    for k in range(20):  # 20 s sent at once, far ahead of playback
        es.add_far(np.full(RATE, 100, np.int16), k * RATE)
    assert es.dropped_far_samples > 0
    assert es.far.ahead_samples <= 5 * RATE
    run(es, np.zeros(3 * RATE, np.int16))
    assert es.far.ring_bytes == ring
    assert es.far.ahead_samples <= 5 * RATE


def test_a_gap_in_the_mic_restarts_framing() -> None:
    es = EchoSuppressor()
    a = es.process(noise_bursts(1000, 5), 0)
    b = es.process(noise_bursts(1000, 6), 50_000)  # the client skipped ahead
    assert a.size == b.size == 1000
    assert np.all(np.isfinite(b))
    assert es.process(np.zeros(0, np.int16), 51_000).size == 0


# -- the real thing: Silero and the gate on corpus speech ----------------------


def speech_onset_ms(name: str) -> int:
    clips = json.loads((CORPUS / "manifest.json").read_text())["clips"]
    return int(next(c for c in clips if c["file"] == name)["speech_ms"][0][0])


def echo_24k(far: Int16Array, n: int, db: float, delay_ms: float, seed: int) -> Float32Array:
    """``far`` as the mic hears it: gain, delay, and +-10 ms jumps every half second."""
    rng = np.random.default_rng(seed)
    out = np.zeros(n, np.float32)
    g = 10 ** (db / 20)
    for lo in range(0, n, 12_000):
        d = max(0, round(24 * (delay_ms + rng.uniform(-10, 10))))
        idx = np.arange(lo, min(n, lo + 12_000)) - d
        ok = (idx >= 0) & (idx < far.size)
        out[lo : lo + idx.size][ok] = g * far[idx[ok]]
    return out


@cache
def runner() -> VadRunner:
    return VadRunner()  # the edge's Silero runner, used synchronously


def vad_events(mic16: Int16Array, far16: Int16Array | None) -> list[SpeechStarted]:
    """SpeechStarted events the gate gives on ``mic16``, suppressing ``far16`` if given."""
    vad = runner()
    stream = vad.new_stream()
    gate = VadGate(VadParams())
    es = EchoSuppressor()
    if far16 is not None:
        es.add_far(far16, 0)
    started = []
    for i in range(0, mic16.size, CHUNK):
        chunk = mic16[i : i + CHUNK]
        x = es.process(chunk, i) if far16 is not None else int16_to_float(chunk)
        for p, end in vad.process_sync(stream, x):
            started += [e for e in gate.push(p, end) if isinstance(e, SpeechStarted)]
    return started


PAIRS = [("utt03_clean.wav", "utt06_clean.wav"), ("utt00_clean.wav", "utt01_clean.wav")]


@needs_corpus
@pytest.mark.parametrize("delay_ms", [0, 60, 120, 250])
@pytest.mark.parametrize("db", [-10, -20])
@pytest.mark.parametrize(("far_name", "user_name"), PAIRS)
def test_echo_does_not_start_speech_but_the_user_does(
    far_name: str, user_name: str, db: int, delay_ms: int
) -> None:
    far24 = load24k(far_name)
    far16 = to16k(far24)
    n = far24.size + 24_000
    seed = zlib.crc32(f"{far_name}{db}{delay_ms}".encode())
    rng = np.random.default_rng(seed)
    echo = echo_24k(far24, n, db, delay_ms, seed) + rng.normal(0, 30, n).astype(np.float32)

    # Unsuppressed, the echo alone is speech to Silero: the test has teeth.
    assert vad_events(to16k(echo), None)
    assert vad_events(to16k(echo), far16) == []

    # The user talks over the assistant from somewhere in its first second.
    user24 = load24k(user_name).astype(np.float32)
    at = int(rng.integers(300, 1000)) * 24
    mixed = echo.copy()
    mixed[at : at + user24.size] += user24[: n - at]
    onset = at // 24 + speech_onset_ms(user_name)
    started = vad_events(to16k(mixed), far16)
    assert started, "user speech over the echo was suppressed"
    assert onset - 100 <= started[0].audio_start_ms
    assert started[0].detected_ms - onset <= 400  # clean speech: ~180 ms


def test_far_audio_sent_far_ahead_and_out_of_order_lands_in_place() -> None:
    es = EchoSuppressor()
    es.add_far(np.full(RATE, 1000, np.int16), 10 * RATE)  # beyond the ring: queued
    es.add_far(np.full(RATE, 1000, np.int16), 8 * RATE)  # earlier, sent later
    assert es.far_active(8 * RATE, 8 * RATE + 10)
    assert not es.far_active(9 * RATE + es.max_delay, 10 * RATE)  # the 1 s gap
    assert es.far_active(10 * RATE, 10 * RATE + 10)
    run(es, np.zeros(9 * RATE, np.int16))  # now both are in the ring
    assert es.far.ahead_samples == 0
    assert not es.far_active(9 * RATE + es.max_delay, 10 * RATE)
    assert es.far_active(10 * RATE + 100, 10 * RATE + 200)


def test_no_reverberation_tail() -> None:
    far = noise_bursts(2 * RATE, 11)
    mic = np.zeros_like(far)
    mic[800:] = far[:-800] // 4
    es = EchoSuppressor(tail_ms=0)
    es.add_far(far, 0)
    out = run(es, mic)
    assert es.delay == 800
    assert np.sum(out[RATE:] ** 2) < 1e-3 * np.sum(int16_to_float(mic)[RATE:] ** 2)
