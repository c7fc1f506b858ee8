"""A new session refused for want of a slot takes one from a session whose client hung
up (``departures.py``: its own close frame, 1000 or 1001).

Such a session waits its disconnect grace for a resume like any other, holding its
route's slot and its upstream session (vLLM-Omni serves one at a time by default), but
a client that said goodbye is unlikely to come back, while a new caller is here: the
session then ends, its upstream session too (``departures.yield_slot``), the one
that hung up first first, and the new session opens. A session whose connection
dropped (no close frame) keeps its slot for its whole grace: its client is likely to
resume."""

from __future__ import annotations

from proxy.capacity import refusal, upstream_full, upstream_of
from proxy.config import Route
from proxy.emulated.departures import parked, yield_slot
from proxy.emulated.runner import EmulatedRunner
from proxy.state import ProxyState


def _relieves(state: ProxyState, route: Route, r: EmulatedRunner) -> bool:
    """Whether ending ``r`` frees a slot in every limit a session on ``route`` hits
    now (the replica's is freed by any)."""
    limit = route.max_sessions
    if limit is not None and state.occupied(route.model) >= limit:
        if r.route.model != route.model:
            return False
    if upstream_full(state, route) and upstream_of(state, r.route) != upstream_of(state, route):
        return False
    return True


async def make_room(state: ProxyState, route: Route) -> None:
    """End sessions whose client hung up, oldest first, while a session on ``route``
    would be refused and ending one frees what it needs."""
    while refusal(state, route) is not None:
        hung_up = [
            r
            for r in state.live.values()
            if isinstance(r, EmulatedRunner) and parked(r) and _relieves(state, route, r)
        ]
        if not hung_up:
            return
        runner = min(hung_up, key=lambda r: r.parked_at or 0.0)
        runner.log.info("session_yielded", to_route=route.model)
        await yield_slot(runner)
