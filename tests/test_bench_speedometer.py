"""``bench/speedometer.py``: the child process samples its unit of work through a window,
the window's median is what the benchmarks report beside their CPU figures, and the child
is gone once stopped."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from speedometer import ELASTICITY, REF_UNIT_MS, Speedometer, at_ref_speed


async def test_the_speedometer_samples_through_a_window_and_stops() -> None:
    async with Speedometer(interval_s=0.05) as speed:
        t0 = time.monotonic()
        while len(speed.samples) < 6:  # noqa: ASYNC110 (the reader task fills them)
            await asyncio.sleep(0.05)
        t1 = time.monotonic()
        proc = speed._proc
    assert proc is not None and proc.returncode is not None  # stopped, not left running
    inside = [ms for t, ms in speed.samples if t0 <= t <= t1]
    assert inside and all(ms > 0 for ms in inside)
    # Samples are stamped on the machine's monotonic clock, the one the benchmarks use.
    assert all(t0 - 60 < t < t1 + 1 for t, _ in speed.samples)
    figures = speed.window(t0, t1)
    assert figures["machine_unit_ms_p50"] == round(statistics.median(inside), 3)
    assert figures["machine_speed"] == round(REF_UNIT_MS / statistics.median(inside), 2)
    # A window it never covered has no reading, rather than a made-up one.
    assert speed.window(t0 - 100, t0 - 50) == {"machine_unit_ms_p50": None, "machine_speed": None}


def test_figures_scale_to_the_reference_speed() -> None:
    # Measured while the unit took twice the reference: the machine ran at half speed, and
    # the figure at the reference speed is smaller (by less than half: the proxy slows less).
    slow = at_ref_speed(30.0, 2 * REF_UNIT_MS)
    assert slow is not None and 15.0 < slow < 30.0
    assert slow == round(30.0 / 2**ELASTICITY, 2)
    fast = at_ref_speed(30.0, REF_UNIT_MS / 2)
    assert fast is not None and 30.0 < fast < 60.0
    assert at_ref_speed(0.1234, REF_UNIT_MS, 4) == 0.1234
    assert at_ref_speed(None, REF_UNIT_MS) is None
    assert at_ref_speed(30.0, None) is None
