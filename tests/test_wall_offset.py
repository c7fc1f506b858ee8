"""The wall clock's offset a snapshot's times are stored on (``proxy/clock.py``).

Every replica tells a snapshot's times on the wall clock; the offset from the edge's
own clock is measured at each snapshot written or restored, so a replica whose wall
clock NTP steps later does not store (or read) every snapshot off by that step for
the rest of its life. A jitter of the measure leaves it as it was: a snapshot that
did not change stores the same bytes.
"""

from __future__ import annotations

import time

import pytest

from proxy import clock


@pytest.fixture
def wall(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The wall clock's step, in seconds, applied to ``time.time`` from now on."""
    step = [0.0]
    real = time.time
    monkeypatch.setattr(clock.time, "time", lambda: real() + step[0])
    monkeypatch.setattr(clock, "_wall_offset", [])
    return step


def test_a_step_of_the_wall_clock_moves_the_offset(wall: list[float]) -> None:
    before = clock.wall_offset_ms()
    wall[0] = 3600.0  # NTP sets the wall clock an hour on
    after = clock.wall_offset_ms()
    assert after - before == pytest.approx(3_600_000.0, abs=clock.WALL_STEP_MS)
    wall[0] = -120.0  # ... and back, two minutes behind where it began
    assert clock.wall_offset_ms() - before == pytest.approx(-120_000.0, abs=clock.WALL_STEP_MS)


def test_a_jitter_of_the_measure_keeps_the_offset(wall: list[float]) -> None:
    first = clock.wall_offset_ms()
    for jitter in (0.0, 0.02, -0.03, 0.04):  # seconds: well within WALL_STEP_MS
        wall[0] = jitter
        assert clock.wall_offset_ms() == first, "the same snapshot would store new bytes"
