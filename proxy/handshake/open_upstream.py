"""Open the upstream session for a new connection, with the client's own opening
``session.update`` when it spoke first."""

from __future__ import annotations

import contextlib
import copy
import time
from typing import Any

import aiohttp

from proxy.capacity import refuse, upstream_limit, upstream_of, upstream_refusal
from proxy.client_frames import ClientFrame
from proxy.client_io import ClientChannel
from proxy.config import Route
from proxy.connection import ClientConnection
from proxy.emulated.shim_setup import shim_settings
from proxy.handshake.upstream_wait import dial_through_warmup
from proxy.upstream import (
    UpstreamLink,
    UpstreamRefused,
    UpstreamUnavailable,
    close_within,
    dial,
    opening_update,
    send_within,
)
from proxy.upstream_book import exhausted, refused_limit
from shim import wire
from shim.capabilities import Classification, classify
from shim.dialects.relay_wire import without_proxy_fields
from shim.dialects.turn_refusals import Refusals
from shim.ga_upstream import opening_session
from shim.native_formats import PROXY_CANNOT_SERVE
from shim.open_refusal import ga_close_code, metric_label, refusal_type
from shim.wire import error_code


def _without_turn_detection(session: dict[str, Any] | None) -> dict[str, Any] | None:
    """``session`` minus its turn detection, or None if it had none to remove."""
    if not session:
        return None
    found = "turn_detection" in session
    trimmed = {k: v for k, v in session.items() if k != "turn_detection"}
    audio = trimmed.get("audio")
    if isinstance(audio, dict) and isinstance(audio.get("input"), dict):
        if "turn_detection" in audio["input"]:
            found = True
            audio_input = {k: v for k, v in audio["input"].items() if k != "turn_detection"}
            trimmed["audio"] = {**audio, "input": audio_input}
    return trimmed if found else None


async def open_upstream(
    conn: ClientConnection,
    route: Route,
    upstream_model: str,
    first: ClientFrame | None,
    ga: bool = False,
) -> UpstreamLink | None:
    """The upstream session for a new connection; None once the client was told why not.

    A speak-first client's ``session.update`` is folded into the opening update, so
    open-only fields such as ``ref_audio`` are honoured.
    """
    cfg = conn.state.config.server
    assert conn.state.http is not None
    # A speak-first client's session.update opens the upstream session itself.
    client_session: dict[str, Any] | None = None
    if first is not None and first.event.get("type") == "session.update":
        session = first.event.get("session")
        client_session = (
            dict(session)
            if isinstance(session, dict)
            else {k: v for k, v in first.event.items() if k not in ("type", "event_id")}
        )
        if client_session.get("type") == "realtime":
            del client_session["type"]  # GA session type, not an upstream field
    url = conn.state.upstream_url(route)
    key = upstream_of(conn.state, route)
    # A GA client's session (or GA defaults, server VAD from [vad]) as a duplex upstream
    # reads it, in the input format the route declares for it (shim/upstream_input.py).
    vad = shim_settings(conn.state).vad
    opening = opening_session(client_session, route.session_defaults, vad) if ga else client_session
    if opening is not None and not ga:  # the proxy's own fields are not the upstream's
        opening = without_proxy_fields(copy.deepcopy(opening))

    async def open_with(session: dict[str, Any] | None) -> UpstreamLink:
        assert conn.state.http is not None
        http = conn.state.http
        started = time.monotonic()
        opener = opening_update(route, upstream_model, session)

        async def dial_within(connect_s: float) -> UpstreamLink:
            return await dial(
                http,
                url,
                route,
                opener,
                connect_s,
                cfg.classify_timeout_s,
                heartbeat_s=cfg.upstream_heartbeat_s,
            )

        # A warming upstream holds the upgrade: wait for it (proxy/handshake/upstream_wait.py).
        link = await dial_through_warmup(conn, url, key, route.warmup_wait_s, dial_within)
        link.opened_with = opener["session"]
        conn.state.metrics.upstream_dial.observe(time.monotonic() - started)
        return link

    try:
        try:
            link = await open_with(opening)
        except UpstreamRefused as exc:
            # A duplex model may refuse the turn detection a GA client's session implies;
            # turn detection is then the proxy's job: open without it. A native client's
            # own is refused as vLLM-Omni refuses it (below): opened without it, its
            # session would take no turns and never say why.
            trimmed = _without_turn_detection(opening)
            if not ga or trimmed is None or exhausted(exc.event):
                raise
            link = await open_with(trimmed)
    except UpstreamRefused as exc:
        if exhausted(exc.event):
            await _upstream_full(conn, route, key, exc.event)
            return None
        await _refused(conn, exc.event, ga)
        return None
    except UpstreamUnavailable as exc:
        conn.state.metrics.upstream_errors.labels("connect").inc()
        # The client learns the route, the log the address (it is internal).
        conn.log.warning("upstream_unavailable", error=str(exc), detail=exc.detail, upstream=url)
        conn.client.send_error("upstream_unavailable", f"route {route.model!r}: {exc}")
        await conn.client.close(1011, "upstream unavailable")
        return None
    link.opening_event = first if client_session is not None else None
    if key is not None:  # whether this upstream takes more than one session at once
        kind = classify(link.created, forced=route.mode, duplex_refused=link.duplex_refused).kind
        conn.state.upstreams.learn_created(key, link.created, kind)
    return link


async def _refused(conn: ClientConnection, event: dict[str, Any], ga: bool) -> None:
    """The upstream refused the session: the client is told its refusal as it said it
    (its code, words and ``param``). vLLM-Omni's ``_open`` then just returns, so a
    native client is closed normally (1000) whatever the error, and keeps the upstream's
    ``type``, as vLLM-Omni's own would. A GA client's type and close say whose failure
    it was, read off the code (``shim/open_refusal.py``: vLLM-Omni types its server
    failures at open ``invalid_request_error`` too): 1000 when the session it asked for
    was refused, 1011 when the server failed."""
    conn.state.metrics.upstream_errors.labels("refused").inc()
    err = event.get("error")
    message = err.get("message") if isinstance(err, dict) else err
    if not isinstance(message, str):
        message = event.get("message") if isinstance(event.get("message"), str) else None
    param = err.get("param") if isinstance(err, dict) else event.get("param")
    param = param if isinstance(param, str) else None
    code = error_code(event) or "upstream_refused"
    told = wire.error(code, message or "", param=param)
    upstream_kind = err.get("type") if isinstance(err, dict) else None
    upstream_kind = upstream_kind if isinstance(upstream_kind, str) and upstream_kind else None
    kind = refusal_type(code, upstream_kind, ga)
    told["error"]["type"] = kind
    conn.log.warning(
        "upstream_refused_session",
        code=code,
        type=kind,
        upstream_type=upstream_kind,
        message=message,
    )
    conn.state.metrics.client_errors.labels(metric_label(code)).inc()
    if not ga:  # what vLLM-Omni says to its own client: only the keys it names
        del told["error"]["event_id"]
        if param is None:
            del told["error"]["param"]
    conn.client.send_event(told)
    close = ga_close_code(kind) if ga else 1000
    await conn.client.close(
        close, "session refused" if close == 1000 else "upstream refused session"
    )


async def _upstream_full(
    conn: ClientConnection, route: Route, key: str | None, event: dict[str, Any]
) -> None:
    """The upstream refused the session for capacity (vLLM-Omni ``resource_exhausted``):
    the client may retry later (1013), and the proxy learns the upstream's own limit."""
    conn.state.metrics.upstream_errors.labels("refused").inc()
    limit = refused_limit(event)
    configured = upstream_limit(conn.state, route)
    if key is not None and limit is not None and conn.state.upstreams.learn_limit(key, limit):
        conn.log.warning("upstream_limit_learned", limit=limit, configured=configured)
    conn.log.info("upstream_at_capacity", limit=limit)
    why = "its upstream is at capacity"
    if limit is not None:
        why += f" ({limit} session(s) at once)"
    await refuse(conn.client, upstream_refusal(route, why))


async def abandon(link: UpstreamLink, duplex: bool) -> None:
    """Close an upstream session no client will have: a duplex upstream's is ended
    (``session.close``), or it would hold one of the upstream's slots for its grace
    (``proxy/emulated/upstream_control.py``, ``close``)."""
    if duplex:
        quiet = (TimeoutError, ConnectionError, RuntimeError, aiohttp.ClientError)
        with contextlib.suppress(*quiet):
            await send_within(link.ws, '{"type": "session.close"}', 1.0)
    await close_within(link.ws)


async def refused_opening(client: ClientChannel, link: UpstreamLink, cls: Classification) -> bool:
    """A native client's opening that vLLM-Omni refuses (a format it does not know,
    turn detection it cannot run), where the proxy answers for a turn-based upstream:
    refused as vLLM-Omni refuses an opening (``invalid_session_config``, in its
    words), and nothing opens (``entrypoints/duplex/serving.py``, ``_open``)."""
    opening = link.opening_event
    if opening is None or cls.kind != "turn" or cls.ga_client:
        return False
    refused = Refusals(native_client=True).session_update(opening.event)
    if refused is None or refused[0] == PROXY_CANNOT_SERVE:
        return False
    await link.ws.close()
    client.send_error("invalid_session_config", refused[1])
    await client.close(1000, "session refused")
    return True
