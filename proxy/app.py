"""The aiohttp application: WebSocket routes, health, readiness, metrics, lifecycle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from proxy.auth.admission import check_metrics_token
from proxy.config import Config
from proxy.embedded import EmbeddedBackends, embedded_kinds
from proxy.handshake.accept import handle_client
from proxy.handshake.client_session import ClientSession
from proxy.logging import get_logger
from proxy.readiness import Readiness
from proxy.state import ProxyState
from proxy.store import open_store
from proxy.upstream import upstream_http
from proxy.web import add_web_routes

WS_PATHS = ("/v1/realtime", "/v1/duplex")


STATE = web.AppKey("proxy_state", ProxyState)
READINESS = web.AppKey("readiness", Readiness)
EMBEDDED = web.AppKey("embedded_backends", EmbeddedBackends)


async def _embedded_backends(app: web.Application) -> AsyncIterator[None]:
    """Start the in-process reference backends that `embedded://KIND` routes name."""
    backends = app[EMBEDDED]
    await backends.ensure(embedded_kinds(app[STATE].config))
    yield
    await backends.close()


async def _shared_resources(app: web.Application) -> AsyncIterator[None]:
    state = app[STATE]
    state.http = upstream_http()
    state.store = await open_store(state.config.store, state.metrics)
    # Load the VAD model before the first session needs it, off the event loop.
    await asyncio.to_thread(state.vad_runner)
    state.metrics.start_sampling()
    yield
    state.metrics.stop_sampling()
    await state.store.close()
    if state.vad is not None:
        await state.vad.close()
    await state.http.close()


async def _route_checks(app: web.Application) -> AsyncIterator[None]:
    # The first check runs before the port opens, so /readyz is right from the start.
    await app[READINESS].start()
    yield
    await app[READINESS].stop()


async def _close_sessions(app: web.Application) -> None:
    """On shutdown: persist and close every client with 1012 so it resumes elsewhere
    (each told its resume token first: ``ClientSession.drain``), all within
    server.drain_timeout_s: the last of it (at most a second) closes what is left."""
    state = app[STATE]
    budget = state.config.server.drain_timeout_s
    last = min(1.0, budget / 4)
    state.draining = True
    app[READINESS].start_drain()
    runners = list(state.live.values())
    sessions = list(state.sessions)
    closing = asyncio.gather(
        *(r.drain() for r in runners), *(s.drain() for s in sessions), return_exceptions=True
    )
    try:
        async with asyncio.timeout(budget - last):  # a scope: a cancellation stays ours
            await closing
    except TimeoutError:
        get_logger(replica_id=state.replica_id).warning(
            "drain_timeout", sessions=len(state.sessions), live=len(state.live)
        )
        # Whatever is still open (a handshake or a session's drain that hung) closes
        # now; a handshake still storing or rotating stops first, so the token its
        # client has still resumes (``ClientSession.cut``).
        left = [s for s in state.sessions if isinstance(s, ClientSession)]
        for s in left:
            s.cut()
        closes = asyncio.gather(
            *(s.client.close(1012, "service restart") for s in left), return_exceptions=True
        )
        try:
            async with asyncio.timeout(last):
                await closes
        except TimeoutError:  # a client that does not answer the close frame
            for s in left:
                if s.request.transport is not None:
                    s.request.transport.abort()


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    status, body = await request.app[READINESS].report()
    return web.json_response(body, status=status)


async def metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    check_metrics_token(request, state.config.auth)
    return web.Response(body=state.metrics.render(), content_type="text/plain", charset="utf-8")


async def websocket(request: web.Request) -> web.StreamResponse:
    return await handle_client(request, request.app[STATE])


def build_app(config: Config, state: ProxyState | None = None) -> web.Application:
    # keepalive_timeout also bounds a connection that never completes its request
    # (a half-open upgrade): aiohttp's default holds it for an hour.
    app = web.Application(
        handler_args={"keepalive_timeout": config.server.http_handshake_timeout_s}
    )
    app[STATE] = state = state or ProxyState(config=config)
    app[READINESS] = Readiness(state)
    app[EMBEDDED] = EmbeddedBackends(state)
    app.cleanup_ctx.append(_embedded_backends)
    app.cleanup_ctx.append(_shared_resources)
    app.cleanup_ctx.append(_route_checks)
    app.on_shutdown.append(_close_sessions)
    for path in WS_PATHS:
        app.router.add_get(path, websocket)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    add_web_routes(app, config, current=lambda: state.config)
    return app
