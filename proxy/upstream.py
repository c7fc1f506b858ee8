"""Dial an upstream, open its session, and learn what kind of server it really is.

The dialects are described in docs/protocol.md. The proxy asks for the duplex
dialect (``?duplex=1``); a server without a duplex adapter refuses with ``error``
code ``unsupported`` and close 1008, and the proxy falls back to the bare URL. It
then sends one opening ``session.update`` that both dialects accept: ``model`` at
the top level (the turn-based dialect reads only that) and a ``session`` object (the
duplex dialect reads only that). The first frame back decides: a flat
``session.created`` is turn-based; one with ``session.capabilities`` is duplex.

Every upstream socket is dialled here (``connect``), with the same options.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from proxy.config import Route
from proxy.upstream_opening import opening_update as opening_update
from proxy.upstream_opening import with_query as with_query
from proxy.ws_direct import UpstreamResponse, fits_direct, install_tap, write_buffered
from shim.wire import error_code

# Look at every upstream socket this often (``server.upstream_heartbeat_s``) and ping
# one that sent nothing since the last look; one that sends nothing back within half of
# it is closed (proxy/ws_heartbeat.py), and the session takes its upstream-lost path.
DEFAULT_HEARTBEAT_S = 15.0


def upstream_http() -> aiohttp.ClientSession:
    """The client session every upstream socket is dialled through.

    No connector limit: aiohttp's default (100) would hold session 101 waiting and
    fail it; the proxy's own limits (``server.max_sessions``, each route's
    ``max_sessions``) decide how many upstream sessions there are."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
    return aiohttp.ClientSession(connector=connector, ws_response_class=UpstreamResponse)


async def send_within(ws: aiohttp.ClientWebSocketResponse, text: str, within_s: float) -> None:
    """Send a frame to an upstream; TimeoutError if it takes none for ``within_s``
    (it stopped reading: its socket and ours are full)."""
    if fits_direct(text) and write_buffered(ws) == 0:
        await ws.send_str(text)  # cannot wait (see ws_direct.DIRECT_MAX_BYTES): no timer per frame
    else:
        async with asyncio.timeout(within_s):  # a scope, not wait_for: no task per frame
            await ws.send_str(text)


async def close_within(ws: aiohttp.ClientWebSocketResponse, within_s: float = 2.0) -> None:
    """Close an upstream socket without waiting on one that takes nothing."""
    try:
        async with asyncio.timeout(within_s):
            await ws.close()
    except (TimeoutError, aiohttp.ClientError, OSError, RuntimeError):
        pass


class UpstreamUnavailable(Exception):
    """The upstream could not be reached or closed before opening a session.

    ``str()`` is safe to show a client: it never names the upstream's address, which
    is internal; ``detail`` (for logs only) may."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class UpstreamRefused(Exception):
    """The upstream answered the opening with an error event (relayed to the client)."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(str(event))
        self.event = event


@dataclass
class UpstreamLink:
    ws: aiohttp.ClientWebSocketResponse
    created: dict[str, Any]
    created_raw: str
    duplex_refused: bool
    url: str
    opening_event: Any = None  # the client's own session.update that opened it
    opened_with: dict[str, Any] | None = None  # the session it opened with, as sent


def _is_refusal(event: dict[str, Any]) -> bool:
    return event.get("type") == "error" and error_code(event) == "unsupported"


async def _connect(
    http: aiohttp.ClientSession, url: str, route: Route, heartbeat_s: float
) -> aiohttp.ClientWebSocketResponse:
    try:
        ws = await http.ws_connect(
            url,
            headers=dict(route.headers),
            timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=2.0),
            max_msg_size=route.upstream_max_frame_bytes,
            autoping=True,
            heartbeat=heartbeat_s,
            compress=0,
        )
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise UpstreamUnavailable("cannot connect to the upstream", detail=str(exc)) from None
    install_tap(ws, route.upstream_max_frame_bytes)  # before any await: nothing read yet
    return ws


async def _timed(coro: Any, within_s: float) -> aiohttp.ClientWebSocketResponse:
    try:  # a scope, not wait_for: 3.11's drops a cancel that comes as the socket opens
        async with asyncio.timeout(within_s):
            ws: aiohttp.ClientWebSocketResponse = await coro
    except TimeoutError:
        raise UpstreamUnavailable(f"upstream did not accept within {within_s:.1f} s") from None
    return ws


async def _first_frame(
    ws: aiohttp.ClientWebSocketResponse, within_s: float
) -> tuple[dict[str, Any], str]:
    try:
        async with asyncio.timeout(within_s):
            msg = await ws.receive()
    except TimeoutError:
        raise UpstreamUnavailable(f"upstream sent nothing within {within_s:.1f} s") from None
    if msg.type != aiohttp.WSMsgType.TEXT:
        code = ws.close_code
        raise UpstreamUnavailable(f"upstream closed before opening a session (close code {code})")
    try:
        event = orjson.loads(msg.data)
    except orjson.JSONDecodeError:
        raise UpstreamUnavailable("upstream sent a frame that is not JSON") from None
    if not isinstance(event, dict):
        raise UpstreamUnavailable("upstream sent a JSON value that is not an event")
    return event, msg.data


async def ask(
    ws: aiohttp.ClientWebSocketResponse, first: str, within_s: float
) -> tuple[dict[str, Any], str]:
    """Send a socket's first event (as text) and read the upstream's first answer,
    parsed and as sent; on any failure (UpstreamUnavailable) the socket is closed."""
    try:
        await ws.send_str(first)
        return await _first_frame(ws, within_s)
    except (ConnectionError, aiohttp.ClientError) as exc:
        await ws.close()
        raise UpstreamUnavailable("the upstream dropped the connection", detail=str(exc)) from None
    except BaseException:
        await ws.close()
        raise


async def dial(
    http: aiohttp.ClientSession,
    base_url: str,
    route: Route,
    opener: dict[str, Any],
    connect_timeout: float,
    classify_timeout: float,
    *,
    heartbeat_s: float = DEFAULT_HEARTBEAT_S,
) -> UpstreamLink:
    """Connect, open the session and return the link with its ``session.created``."""
    refused = False
    attempts = [True, False] if route.request_duplex else [False]
    for ask_duplex in attempts:
        url = base_url
        if ask_duplex:
            url = with_query(
                base_url, {"duplex": "1", "model": str(opener["model"]), "autostart": "0"}
            )
        ws = await _timed(_connect(http, url, route, heartbeat_s), connect_timeout)
        event, raw = await ask(ws, orjson.dumps(opener).decode(), classify_timeout)
        if ask_duplex and _is_refusal(event):
            refused = True
            await ws.close()
            continue
        if event.get("type") == "session.created":
            return UpstreamLink(ws, event, raw, duplex_refused=refused, url=url)
        await ws.close()
        if event.get("type") == "error":
            raise UpstreamRefused(event)
        raise UpstreamUnavailable(
            f"upstream opened with {event.get('type')!r}, not session.created"
        )
    raise UpstreamUnavailable("upstream refused the session")


async def redial_turn(
    http: aiohttp.ClientSession,
    url: str,
    route: Route,
    connect_timeout: float,
    classify_timeout: float,
    *,
    heartbeat_s: float = DEFAULT_HEARTBEAT_S,
) -> aiohttp.ClientWebSocketResponse:
    """A fresh turn-based upstream connection (after an abort); eats its session.created."""
    ws = await _timed(_connect(http, url, route, heartbeat_s), connect_timeout)
    try:
        event, _ = await _first_frame(ws, classify_timeout)
    except BaseException:
        await ws.close()
        raise
    if event.get("type") != "session.created":
        await ws.close()
        raise UpstreamUnavailable(f"upstream reopened with {event.get('type')!r}")
    return ws


# ---------------------------------------------------------------------- resume


def resume_url(base_url: str, upstream_model: str) -> str:
    """Where a duplex upstream session is resumed: no autostart, so that the first
    frame the server reads is the ``session.resume``."""
    return with_query(base_url, {"duplex": "1", "model": upstream_model, "autostart": "0"})


async def connect(
    http: aiohttp.ClientSession,
    url: str,
    route: Route,
    connect_timeout: float,
    *,
    heartbeat_s: float = DEFAULT_HEARTBEAT_S,
) -> aiohttp.ClientWebSocketResponse:
    """A bare upstream socket; nothing is sent on it yet."""
    return await _timed(_connect(http, url, route, heartbeat_s), connect_timeout)


async def resume_over(
    ws: aiohttp.ClientWebSocketResponse,
    url: str,
    session_id: str,
    resume_token: str,
    after_seq: int,
    classify_timeout: float,
) -> UpstreamLink:
    """Reattach an upstream duplex session on ``ws`` with its own ``session.resume``.

    The upstream answers ``session.resumed`` (with a new resume token), then replays
    its events after ``after_seq`` and goes on live. Raises UpstreamRefused with its
    answer (expired, bad token, ``session.resync_required`` when its journal no longer
    reaches back that far), or UpstreamUnavailable; the socket is closed then.
    """
    resume = {
        "type": "session.resume",
        "session_id": session_id,
        "resume_token": resume_token,
        "last_received_server_event_seq": after_seq,
    }
    event, raw = await ask(ws, orjson.dumps(resume).decode(), classify_timeout)
    if event.get("type") != "session.resumed" or not isinstance(event.get("resume_token"), str):
        await ws.close()
        raise UpstreamRefused(event)
    return UpstreamLink(ws=ws, created=event, created_raw=raw, duplex_refused=False, url=url)


async def resume_upstream(
    http: aiohttp.ClientSession,
    base_url: str,
    route: Route,
    upstream_model: str,
    session_id: str,
    resume_token: str,
    after_seq: int,
    connect_timeout: float,
    classify_timeout: float,
    *,
    heartbeat_s: float = DEFAULT_HEARTBEAT_S,
) -> UpstreamLink:
    """``connect`` then ``resume_over``."""
    url = resume_url(base_url, upstream_model)
    ws = await connect(http, url, route, connect_timeout, heartbeat_s=heartbeat_s)
    return await resume_over(ws, url, session_id, resume_token, after_seq, classify_timeout)
