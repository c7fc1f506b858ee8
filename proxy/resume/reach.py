"""A socket to a route's upstream for a resume, or the resume fails with
``upstream_unavailable`` (counted as an upstream connect error) before anything moved:
worth trying again (close 1013)."""

from __future__ import annotations

import aiohttp

from proxy.config import Route
from proxy.resume.request import upstream_unavailable
from proxy.state import ProxyState
from proxy.upstream import UpstreamUnavailable, connect


async def reach_upstream(
    state: ProxyState, route: Route, url: str
) -> aiohttp.ClientWebSocketResponse:
    """The upstream at ``url`` for ``route``, dialled with the server's timeouts."""
    assert state.http is not None
    cfg = state.config.server
    try:
        return await connect(
            state.http,
            url,
            route,
            cfg.upstream_connect_timeout_s,
            heartbeat_s=cfg.upstream_heartbeat_s,
        )
    except UpstreamUnavailable:
        state.metrics.upstream_errors.labels("connect").inc()
        raise upstream_unavailable(
            "cannot reach the upstream; try again or start a new session"
        ) from None
