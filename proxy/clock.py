"""The proxy's one clock for session inputs: monotonic milliseconds.

The shim takes time as an input (it never reads a clock); everything the edge
hands it is stamped with this.
"""

from __future__ import annotations

import time


def now_ms() -> float:
    return time.monotonic() * 1000.0
