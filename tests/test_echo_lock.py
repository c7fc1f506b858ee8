"""The echo suppressor's lock (``shim/echo_lock.py``): a delay found by one search is on
trial until the microphone after it is explained there too, and an echo far louder
than what was played is no echo.

With no echo at all, a search over thousands of lags sometimes finds one where the
answer "explains" a window of the user's voice. Kept, that lock has the residual
suppressor take the user's words for echo: a barge-in neither cut nor answered."""

from __future__ import annotations

import numpy as np

from shim.audio import Int16Array, float_to_int16, int16_to_float
from shim.echo import EchoSuppressor
from tests.corpus import load24k, needs_corpus, to16k

RATE = 16000
CHUNK = 320


def feed(es: EchoSuppressor, mic: Int16Array) -> tuple[np.ndarray, list[int | None]]:
    """The suppressor's output on ``mic`` (20 ms calls) and its delay after each call."""
    out, delays = [], []
    for i in range(0, mic.size, CHUNK):
        out.append(es.process(mic[i : i + CHUNK], i))
        delays.append(es.delay)
    return np.concatenate(out), delays


def noise_bursts(n: int, seed: int) -> Int16Array:
    rng = np.random.default_rng(seed)
    env = np.repeat(rng.random(n // 1600 + 1) > 0.3, 1600)[:n]
    return float_to_int16(0.1 * rng.standard_normal(n) * env)


@needs_corpus
def test_a_lock_on_the_users_voice_with_no_echo_is_undone() -> None:
    """The answer plays (``utt10``), no echo comes back, and the user talks over it
    (``utt03`` in white noise): one search finds a lag where the answer explains the
    user's voice half a second in. On trial, the next 40 ms are not explained there, so
    the lock goes and the user's words reach the VAD whole (a kept lock removed half
    their energy, for seconds)."""
    far = to16k(load24k("utt10_clean.wav"))
    user = to16k(load24k("utt03_white10.wav"))
    lead, onset = 7140, 7140 + 13119
    mic = np.zeros(onset + user.size, np.int16)
    mic[onset:] = user
    es = EchoSuppressor()
    es.add_far(far, lead)
    out, delays = feed(es, mic)
    locked_ms = sum(d is not None for d in delays) * CHUNK * 1000 // RATE
    assert any(d is not None for d in delays), "no lock was tried: the case lost its teeth"
    assert locked_ms <= 60, f"a coincidental lock kept for {locked_ms} ms"
    assert delays[-1] is None
    span = slice(onset + RATE // 2, onset + 3 * RATE // 2)
    x = int16_to_float(mic)[span]
    y = out[span.start + es.latency : span.stop + es.latency]
    assert float(np.dot(y, y) / np.dot(x, x)) > 0.9


def test_an_echo_far_louder_than_what_was_played_is_not_locked() -> None:
    far = noise_bursts(2 * RATE, 1)
    delay = 1600
    mic = np.zeros_like(far)
    mic[delay:] = np.clip(far[:-delay].astype(np.float32) * 3.0, -32768, 32767).astype(np.int16)
    es = EchoSuppressor()
    es.add_far(far, 0)
    _, delays = feed(es, mic)
    assert all(d is None for d in delays)
    es = EchoSuppressor(max_gain=4.0)  # a client whose microphone does amplify that much
    es.add_far(far, 0)
    _, delays = feed(es, mic)
    assert delays[-1] == delay


def test_a_real_echo_is_locked_at_once_and_kept() -> None:
    far = noise_bursts(3 * RATE, 2)
    delay = 2345
    mic = np.zeros_like(far)
    mic[delay:] = (far[:-delay].astype(np.float32) * 0.1).astype(np.int16)
    es = EchoSuppressor()
    es.add_far(far, 0)
    _, delays = feed(es, mic)
    first = next(i for i, d in enumerate(delays) if d is not None)
    assert first * CHUNK < delay + es.window + 2 * CHUNK  # as soon as a window holds it
    assert delays[first:] == [delay] * (len(delays) - first)


def test_a_jump_in_playback_timing_beyond_the_search_around_the_lock_is_followed() -> None:
    """The client's playback slips by 150 ms (more than the +-40 ms followed around the
    lock): the full search finds the new delay, and the audio after it confirms it."""
    far = noise_bursts(4 * RATE, 3)
    d1, d2, at = 1600, 4000, 2 * RATE
    mic = np.zeros_like(far)
    mic[d1:at] = (far[: at - d1].astype(np.float32) * 0.3).astype(np.int16)
    mic[at:] = (far[at - d2 : -d2].astype(np.float32) * 0.3).astype(np.int16)
    es = EchoSuppressor()
    es.add_far(far, 0)
    _, delays = feed(es, mic)
    assert delays[at // CHUNK - 1] == d1
    assert delays[-1] == d2
    assert es.lock._trial is None
