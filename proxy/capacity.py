"""Whether a new session may open now: the replica, its route, and its route's upstream.

Sessions are counted, not sockets: a connection routed and opening, a passthrough
relay, and an emulated session from its start to its end, its disconnect grace
included (``ProxyState.occupied``). A resumed session reuses its own slot. Three
limits apply, each before any upstream is dialled:

* ``server.max_sessions`` (this replica) and the route's ``max_sessions``:
  ``server_at_capacity``;
* the route's upstream (``routes.X.upstream_capacity``), counting the sessions of
  every route to the same upstream server: ``upstream_at_capacity``. Unset, it is 1
  for a duplex server that said it takes one session at a time (vLLM-Omni's default
  ``max_sessions``) and none otherwise; the server's own limit, once it refused a
  session with ``resource_exhausted``, applies when lower (``proxy/upstream_book.py``).

Every refusal closes 1013 with a retry hint in the message and the close reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.client_io import ClientChannel
from proxy.config import Route
from proxy.state import ProxyState
from proxy.upstream_book import upstream_key

RETRY_AFTER_S = 5  # a hint: sessions end all the time; not a promise


@dataclass(frozen=True, slots=True)
class Refusal:
    code: str  # server_at_capacity or upstream_at_capacity
    message: str
    retry_after_s: int = RETRY_AFTER_S

    @property
    def close_reason(self) -> str:
        what = "upstream" if self.code == "upstream_at_capacity" else "server"
        return f"{what} at capacity; retry after {self.retry_after_s} s"


def upstream_of(state: ProxyState, route: Route) -> str | None:
    """The upstream server a route reaches, or None (an embedded one not yet up)."""
    kind = route.embedded_kind
    if kind is not None and kind not in state.embedded_urls:
        return None
    return upstream_key(state.upstream_url(route))


def upstream_limit(state: ProxyState, route: Route) -> int | None:
    """Sessions the route's upstream takes at once; None: no limit."""
    key = upstream_of(state, route)
    facts = state.upstreams.facts(key) if key is not None else None
    configured = route.upstream_capacity
    limit: int | None
    if configured is not None:
        limit = configured or None  # 0: no limit of its own
    else:
        # Not known before a session.created: the server's own refusal covers that.
        limit = 1 if facts is not None and facts.single else None
    learned = facts.limit if facts is not None else None
    if learned is not None and (limit is None or learned < limit):
        return learned
    return limit


def upstream_sessions(state: ProxyState, key: str, *, firm: bool = False) -> int:
    """Sessions of this replica holding a slot on upstream ``key``, by any route
    (``firm``: not counting those that would give it to a new session)."""
    routes = {r.model: r for r in state.config.routes}
    count = 0
    for holder in (*state.sessions, *state.live.values()):
        if firm and holder.yields_slot():
            continue
        slot = holder.slot()
        route = routes.get(slot) if slot else None
        if route is not None and upstream_of(state, route) == key:
            count += 1
    return count


def upstream_full(state: ProxyState, route: Route, *, firm: bool = False) -> bool:
    key = upstream_of(state, route)
    limit = upstream_limit(state, route)
    if key is None or limit is None:
        return False
    return upstream_sessions(state, key, firm=firm) >= limit


def refusal(state: ProxyState, route: Route) -> Refusal | None:
    """Why a new session on ``route`` cannot open now, or None."""
    limit = route.max_sessions
    if limit is not None and state.occupied(route.model) >= limit:
        return Refusal(
            "server_at_capacity",
            f"route {route.model!r} is at capacity ({limit} sessions); "
            f"retry after {RETRY_AFTER_S} s",
        )
    if state.occupied() >= state.config.server.max_sessions:
        return Refusal(
            "server_at_capacity", f"this replica is at capacity; retry after {RETRY_AFTER_S} s"
        )
    if upstream_full(state, route):
        return upstream_refusal(
            route, f"its upstream takes {upstream_limit(state, route)} session(s) at once"
        )
    return None


def upstream_refusal(route: Route, why: str) -> Refusal:
    return Refusal(
        "upstream_at_capacity",
        f"route {route.model!r}: {why}, all taken; retry after {RETRY_AFTER_S} s",
    )


async def refuse(client: ClientChannel, why: Refusal) -> None:
    """Tell the client, then close 1013 (try again later)."""
    client.send_error(why.code, why.message)
    await client.close(1013, why.close_reason)
