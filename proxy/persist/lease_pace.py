"""How often a session that changed nothing checks its lease in the store.

The check is one fenced write (``Persister._touch``). It refreshes the keys' expiry
(``disconnect_grace_s``), and an owner that lost the session to a resume on another
replica learns it there, so its still-open client gets ``session.replaced``. Fencing
does not depend on it: every write is fenced by the epoch whatever the pace.

With Redis the check was most of what an idle session cost (a round trip a second,
bench/idle_cost.py), so it slows while the session stays quiet: every second for the
first seconds after a change (a client that just left and resumes elsewhere is seen
at once), then a quarter of the quiet time, up to ``QUIET_LEASE_CHECK_S``, never
less often than three times in the grace (the keys must not expire). The wait that
coalesces a busy session's checkpoints (``checkpoint_interval_s``) ends when the lease
is due, so it never stretches that pace (``Persister.run``). A write the store failed
is tried again after ``retry_pause``, at most a lease interval: with Redis the grace
must leave room for one timed-out write and its retry (``min_grace_s`` in
``proxy/config_store.py``, checked with the config).
"""

from __future__ import annotations

import asyncio
import time

from proxy.config_store import STORE_RETRY_S

LEASE_CHECK_S = 1.0
QUIET_LEASE_CHECK_S = 4.0


def lease_check_interval(quiet_s: float, grace_s: float) -> float:
    """Seconds until the next check of a session that changed nothing for ``quiet_s``."""
    pace = min(QUIET_LEASE_CHECK_S, max(LEASE_CHECK_S, quiet_s / 4))
    return min(pace, grace_s / 3)


def retry_pause(interval: float) -> float:
    """Seconds from a write the store failed to the next try: ``STORE_RETRY_S``, or
    the lease interval if shorter (a short grace's keys must outlive one failure)."""
    return min(STORE_RETRY_S, interval)


def lease_due(last_write: float, failed_at: float, interval: float) -> float:
    """Seconds until the lease is written again: ``interval`` after the last write, or
    a retry's pause after a write that failed since (not at once). Monotonic times."""
    retry = failed_at > last_write
    due = failed_at + retry_pause(interval) if retry else last_write + interval
    return due - time.monotonic()


async def set_within(event: asyncio.Event, seconds: float) -> bool:
    """Whether ``event`` is set within ``seconds`` (at once if it is already)."""
    if event.is_set():
        return True  # (no timeout scope: a busy session's checkpoint finds it set)
    try:
        async with asyncio.timeout(max(0.0, seconds)):
            await event.wait()
    except TimeoutError:
        return False
    return True
