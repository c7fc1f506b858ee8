"""Dialling a replacement for an emulated session's upstream socket: one try of a
fresh upstream session, or of the upstream's own session resumed. The tries, their
budget and their outcome are ``proxy/emulated/upstream_control.py``'s."""

from __future__ import annotations

from typing import Any

import aiohttp

from proxy.config import Route
from proxy.state import ProxyState
from proxy.upstream import opening_update, redial_turn, resume_upstream
from proxy.upstream_fresh import dial_fresh
from shim.actions import ResumeUpstream
from shim.capabilities import Classification

Socket = aiohttp.ClientWebSocketResponse


async def open_fresh(
    state: ProxyState,
    route: Route,
    cls: Classification,
    upstream_model: str,
    url: str,
    session: dict[str, Any] | None = None,
) -> tuple[Socket, dict[str, Any]]:
    """A new upstream session on a new socket, opened with ``session`` (the client's
    settings) over the route's, and its ``session.created`` (nothing for the turn-based
    dialect, whose flat one the shim has no use for).

    Raises UpstreamUnavailable or UpstreamRefused."""
    http, cfg = state.http, state.config.server
    assert http is not None
    if cls.kind == "turn":
        ws = await redial_turn(
            http,
            url,
            route,
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
            heartbeat_s=cfg.upstream_heartbeat_s,
        )
        return ws, {}
    # Its lost session may hold the upstream's slot for its grace: proxy/upstream_fresh.py.
    link = await dial_fresh(
        http,
        state.upstream_url(route),
        route,
        opening_update(route, upstream_model, session),
        cfg.upstream_connect_timeout_s,
        cfg.classify_timeout_s,
        heartbeat_s=cfg.upstream_heartbeat_s,
    )
    return link.ws, link.created


async def resume_own(
    state: ProxyState, route: Route, upstream_model: str, action: ResumeUpstream
) -> tuple[Socket, dict[str, Any]]:
    """The upstream's own session on a new socket, and its ``session.resumed``.

    The upstream replays what the proxy had not handled. Raises
    UpstreamUnavailable or UpstreamRefused (restarted, expired, journal gone)."""
    http, cfg = state.http, state.config.server
    assert http is not None
    link = await resume_upstream(
        http,
        state.upstream_url(route),
        route,
        upstream_model,
        action.session_id,
        action.resume_token,
        action.after_seq,
        cfg.upstream_connect_timeout_s,
        cfg.classify_timeout_s,
        heartbeat_s=cfg.upstream_heartbeat_s,
    )
    return link.ws, link.created
