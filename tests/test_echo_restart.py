"""The echo suppressor's delay search after its microphone restarts (a move to another
replica, a gap): it waits for a full window of the microphone before it locks, so a
chunk or two that happen to resemble the answer do not lock it onto the user's voice,
which it would then suppress as echo (a barge-in after a move never heard)."""

from __future__ import annotations

import numpy as np

from shim.audio import Int16Array, float_to_int16
from shim.echo import EchoSuppressor

RATE = 16000
CHUNK = 320


def noise(n: int, seed: int) -> Int16Array:
    return float_to_int16(0.1 * np.random.default_rng(seed).standard_normal(n))


def feed(es: EchoSuppressor, mic: Int16Array, at: int) -> None:
    for i in range(0, mic.size, CHUNK):
        es.process(mic[i : i + CHUNK], at + i)


def test_one_chunk_like_the_answer_as_both_begin_does_not_lock() -> None:
    """After a move the microphone's timeline starts afresh and the answer's audio held
    on the old replica arrives at once, placed from the same sample: the first search
    sees one chunk of each. A first chunk of the user's that resembles the answer's
    (a stand-in model answers in the user's own voice) must not lock the delay."""
    start = 0
    far = noise(4 * RATE, 1)
    user = noise(RATE, 2)  # the user's voice: nothing like the answer
    user[:CHUNK] = far[:CHUNK] // 2  # but its first chunk is
    es = EchoSuppressor()
    es.add_far(far, start)
    feed(es, user, start)
    assert es.delay is None, "locked on one chunk"


def test_a_real_echo_after_a_restart_still_locks_within_a_window() -> None:
    far = noise(4 * RATE, 1)
    lag, start = 2000, 8000
    es = EchoSuppressor()
    es.add_far(far, 0)
    echo = (far[start - lag : start - lag + RATE // 2].astype(np.float32) * 0.3).astype(np.int16)
    feed(es, echo, start)
    assert es.delay is not None and abs(es.delay - lag) <= 1
