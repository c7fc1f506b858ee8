"""The proxy's one clock for session inputs: monotonic milliseconds.

The shim takes time as an input (it never reads a clock); everything the edge
hands it is stamped with this.
"""

from __future__ import annotations

import time


def now_ms() -> float:
    return time.monotonic() * 1000.0


#: How far the wall clock may move against ``now_ms()`` before the offset is taken
#: again: well past the jitter of reading two clocks one after the other (and an NTP
#: slew's drift over minutes), well below what the idle timeout would notice.
WALL_STEP_MS = 100.0

_wall_offset: list[float] = []


def wall_offset_ms() -> float:
    """Wall-clock ms minus ``now_ms()``: what a stored snapshot's times are told on
    (``shim/snapshot_clock.py``), as every replica shares the wall clock. Measured at
    each call, so a step of the wall clock (NTP setting it right) is picked up by the
    next snapshot written or restored; but the offset last used is kept while the
    measure stays within ``WALL_STEP_MS`` of it, so a snapshot that did not change
    stores the same bytes (the persister skips writing a field it wrote before)."""
    measured = time.time() * 1000.0 - now_ms()
    if not _wall_offset or abs(measured - _wall_offset[0]) > WALL_STEP_MS:
        _wall_offset[:] = [measured]
    return _wall_offset[0]
