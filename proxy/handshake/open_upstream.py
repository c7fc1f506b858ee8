"""Open the upstream session for a new connection, with the client's own opening
``session.update`` when it spoke first."""

from __future__ import annotations

import time
from typing import Any

from proxy.client_io import ClientFrame
from proxy.config import Route
from proxy.connection import ClientConnection
from proxy.upstream import UpstreamLink, UpstreamRefused, UpstreamUnavailable, dial, opening_update
from shim.ga_upstream import opening_session
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
    # A GA client's session (or GA defaults) as a duplex upstream reads it.
    opening = opening_session(client_session) if ga else client_session

    async def open_with(session: dict[str, Any] | None) -> UpstreamLink:
        assert conn.state.http is not None
        started = time.monotonic()
        link = await dial(
            conn.state.http,
            url,
            route,
            opening_update(route, upstream_model, session),
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
            heartbeat_s=cfg.upstream_heartbeat_s,
        )
        conn.state.metrics.upstream_dial.observe(time.monotonic() - started)
        return link

    try:
        try:
            link = await open_with(opening)
        except UpstreamRefused:
            # A duplex model without barge-in may refuse server VAD in its opening
            # config; turn detection is then the proxy's job: open without it.
            trimmed = _without_turn_detection(opening)
            if trimmed is None:
                raise
            link = await open_with(trimmed)
    except UpstreamRefused as exc:
        conn.state.metrics.upstream_errors.labels("refused").inc()
        err = exc.event.get("error")
        message = err.get("message") if isinstance(err, dict) else err
        code = error_code(exc.event)
        conn.log.warning("upstream_refused_session", code=code, message=message)
        conn.client.send_error(
            "upstream_refused", f"upstream refused the session: {code}: {message}"
        )
        await conn.client.close(1011, "upstream refused session")
        return None
    except UpstreamUnavailable as exc:
        conn.state.metrics.upstream_errors.labels("connect").inc()
        # The client learns the route, the log the address (it is internal).
        conn.log.warning("upstream_unavailable", error=str(exc), detail=exc.detail, upstream=url)
        conn.client.send_error("upstream_unavailable", f"route {route.model!r}: {exc}")
        await conn.client.close(1011, "upstream unavailable")
        return None
    link.opening_event = first if client_session is not None else None
    return link
