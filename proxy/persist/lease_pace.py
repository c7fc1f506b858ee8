"""How often a session that changed nothing checks its lease in the store.

The check is one fenced write (``Persister._touch``). It refreshes the keys' expiry
(``disconnect_grace_s``), and an owner that lost the session to a resume on another
replica learns it there, so its still-open client gets ``session.replaced``. Fencing
does not depend on it: every write is fenced by the epoch whatever the pace.

With Redis the check was most of what an idle session cost (a round trip a second,
bench/idle_cost.py), so it slows while the session stays quiet: every second for the
first seconds after a change (a client that just left and resumes elsewhere is seen
at once), then a quarter of the quiet time, up to ``QUIET_LEASE_CHECK_S``, never
less often than three times in the grace (the keys must not expire).
"""

from __future__ import annotations

LEASE_CHECK_S = 1.0
QUIET_LEASE_CHECK_S = 4.0


def lease_check_interval(quiet_s: float, grace_s: float) -> float:
    """Seconds until the next check of a session that changed nothing for ``quiet_s``."""
    pace = min(QUIET_LEASE_CHECK_S, max(LEASE_CHECK_S, quiet_s / 4))
    return min(pace, grace_s / 3)
