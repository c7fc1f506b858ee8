"""Per-principal limits on a given clock: sessions at once, and per sliding minute."""

from __future__ import annotations

from proxy.auth.limits import SWEEP_AT, SessionLimits
from proxy.auth.principal import Principal


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_minute_slides_and_retry_after_says_when() -> None:
    clock = Clock()
    limits = SessionLimits(clock)
    key = Principal("k", sessions_per_minute=2)
    assert limits.acquire(key) is None
    clock.now += 20
    assert limits.acquire(key) is None
    hit = limits.acquire(key)
    assert hit is not None and hit.code == "key_rate_limit" and hit.retry_after_s == 40
    clock.now += 40  # the first connection leaves the window
    assert limits.acquire(key) is None
    assert limits.acquire(Principal("other", sessions_per_minute=2)) is None


def test_sessions_at_once_are_released_when_they_end() -> None:
    limits = SessionLimits(Clock())
    key = Principal("k", max_sessions=2)
    assert limits.acquire(key) is None and limits.acquire(key) is None
    hit = limits.acquire(key)
    assert hit is not None and hit.code == "key_session_limit"
    limits.release(key)
    assert limits.acquire(key) is None


def test_old_subjects_are_forgotten() -> None:
    clock = Clock()
    limits = SessionLimits(clock)
    for i in range(SWEEP_AT + 10):
        sub = Principal(f"jwt:{i}", sessions_per_minute=5)
        assert limits.acquire(sub) is None
        limits.release(sub)
    clock.now += 61
    assert limits.acquire(Principal("jwt:new", sessions_per_minute=5)) is None
    assert len(limits._recent) == 1 and not limits._open.get("jwt:0")
