"""``InputClock.time_of`` reads the newest start first (the usual case, the audio just
appended); any sample gets the time the full search over the starts gives."""

from __future__ import annotations

import random

from shim.dialects.relay_input_clock import PAUSE_MS, InputClock
from shim.settings import VAD_RATE


def searched(clock: InputClock, sample: int) -> float:
    """``time_of`` as the search over every start, newest first, always did it."""
    starts = clock._starts
    if not starts:
        return 0.0
    at, ms = next(((s, t) for s, t in reversed(starts) if sample >= s), starts[0])
    return ms + (sample - at) * 1000 / VAD_RATE


def test_time_of_is_the_search_for_every_sample() -> None:
    rng = random.Random(13)
    restarted = 0
    for _ in range(40):
        clock = InputClock()
        assert clock.time_of(rng.randrange(0, 10_000)) == 0.0
        sample, now = 0, 0.0
        for _ in range(rng.randrange(1, 120)):
            n = rng.choice([320, 480, 512, 1, 7_999])
            # Real time, faster than real time, or after a pause (a restart).
            now += rng.choice([n * 1000 / VAD_RATE, 0.0, PAUSE_MS + rng.random() * 2000])
            clock.on_audio(sample, now)
            sample += n
            for probe in (sample, sample - 1, 0, rng.randrange(0, sample + 1), sample + 999):
                assert clock.time_of(probe) == searched(clock, probe)
        restarted += len(clock._starts) > 1
    assert restarted > 20  # most runs map samples before their last start too
