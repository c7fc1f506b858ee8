"""The proxy's one clock for session inputs: monotonic milliseconds.

The shim takes time as an input (it never reads a clock); everything the edge
hands it is stamped with this.
"""

from __future__ import annotations

import time


def now_ms() -> float:
    return time.monotonic() * 1000.0


_wall_offset: list[float] = []


def wall_offset_ms() -> float:
    """Wall-clock ms minus ``now_ms()``, taken once per process: what a stored
    snapshot's times are told on (``shim/snapshot_clock.py``), as every replica shares
    the wall clock. Fixed, so a snapshot that did not change stores the same."""
    if not _wall_offset:
        _wall_offset.append(time.time() * 1000.0 - now_ms())
    return _wall_offset[0]
