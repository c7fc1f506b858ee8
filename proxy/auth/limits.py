"""Per-principal limits: sessions open at once, and connections in the last minute.

Counted per replica, in memory: each replica enforces its own share (a known limit, the
README's "Security" section says why and what to set).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from proxy.auth.principal import Principal

WINDOW_S = 60.0
SWEEP_AT = 1024  # principals remembered before old windows are swept


@dataclass(frozen=True, slots=True)
class LimitHit:
    code: str
    message: str
    retry_after_s: int


class SessionLimits:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._open: dict[str, int] = {}
        self._recent: dict[str, deque[float]] = {}
        self._swept = clock()

    def acquire(self, principal: Principal) -> LimitHit | None:
        """Count one more connection for ``principal``, or say which limit it hits."""
        now = self._clock()
        self._sweep(now)
        recent = self._recent.get(principal.id, deque())
        while recent and recent[0] <= now - WINDOW_S:
            recent.popleft()
        cap = principal.max_sessions
        if cap is not None and self._open.get(principal.id, 0) >= cap:
            return LimitHit(
                "key_session_limit", f"{cap} sessions are already open with these credentials", 1
            )
        rate = principal.sessions_per_minute
        if rate is not None and len(recent) >= rate:
            wait = math.ceil(recent[0] + WINDOW_S - now)
            return LimitHit(
                "key_rate_limit",
                f"more than {rate} sessions a minute with these credentials",
                max(1, wait),
            )
        if rate is not None:
            recent.append(now)
            self._recent[principal.id] = recent
        self._open[principal.id] = self._open.get(principal.id, 0) + 1
        return None

    def _sweep(self, now: float) -> None:
        """Forget subjects with nothing in the window (token subjects are unbounded)."""
        if len(self._recent) < SWEEP_AT or now - self._swept < WINDOW_S:
            return
        self._swept = now
        for pid in [p for p, r in self._recent.items() if not r or r[-1] <= now - WINDOW_S]:
            del self._recent[pid]

    def release(self, principal: Principal) -> None:
        left = self._open.get(principal.id, 0) - 1
        if left > 0:
            self._open[principal.id] = left
        else:
            self._open.pop(principal.id, None)
