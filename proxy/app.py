"""The aiohttp application: WebSocket routes, health, readiness, metrics, lifecycle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from proxy.config import Config
from proxy.handshake.accept import handle_client
from proxy.logging import get_logger
from proxy.reference.server import build_reference_app
from proxy.state import ProxyState
from proxy.store import open_store
from proxy.upstream import upstream_http
from proxy.web import add_web_routes

WS_PATHS = ("/v1/realtime", "/v1/duplex")


STATE = web.AppKey("proxy_state", ProxyState)


async def _embedded_backends(app: web.Application) -> AsyncIterator[None]:
    """Start the in-process reference backends that `embedded://KIND` routes name."""
    state = app[STATE]
    kinds = sorted({k for r in state.config.routes if (k := r.embedded_kind) is not None})
    runners: list[web.AppRunner] = []
    for kind in kinds:
        runner = web.AppRunner(build_reference_app(kind), handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        state.embedded_urls[kind] = f"ws://127.0.0.1:{port}/v1/realtime"
        runners.append(runner)
        get_logger().info("embedded_backend_started", kind=kind, url=state.embedded_urls[kind])
    yield
    for runner in runners:
        await runner.cleanup()


async def _shared_resources(app: web.Application) -> AsyncIterator[None]:
    state = app[STATE]
    state.http = upstream_http()
    state.store = await open_store(state.config.store, state.metrics)
    # Load the VAD model before the first session needs it, off the event loop.
    await asyncio.to_thread(state.vad_runner)
    yield
    await state.store.close()
    if state.vad is not None:
        await state.vad.close()
    await state.http.close()


async def _close_sessions(app: web.Application) -> None:
    """On shutdown: persist and close every client with 1012 so it resumes elsewhere."""
    state = app[STATE]
    state.draining = True
    runners = list(state.live.values())
    sessions = list(state.sessions)
    await asyncio.gather(
        *(r.drain() for r in runners), *(s.drain() for s in sessions), return_exceptions=True
    )


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    state = request.app[STATE]
    checks: dict[str, object] = {"draining": state.draining}
    ready = not state.draining and state.http is not None
    occupied = state.occupied()  # sessions, in their disconnect grace too; not sockets
    capacity = occupied < state.config.server.max_sessions
    checks["sessions"] = occupied
    checks["capacity"] = capacity
    ready = ready and capacity
    degraded: list[str] = []
    if state.store is not None:
        store_ok = await state.store.healthy()
        checks["store"] = "ok" if store_ok else "unavailable"
        if not store_ok:
            # Live sessions keep talking; only resume is unavailable.
            degraded.append("session store unavailable: resume disabled")
    checks["degraded"] = degraded
    status = "ready" if ready else "not_ready"
    if ready and degraded:
        status = "degraded"
    return web.json_response({"status": status, **checks}, status=200 if ready else 503)


async def metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.Response(body=state.metrics.render(), content_type="text/plain", charset="utf-8")


async def websocket(request: web.Request) -> web.StreamResponse:
    return await handle_client(request, request.app[STATE])


def build_app(config: Config, state: ProxyState | None = None) -> web.Application:
    # keepalive_timeout also bounds a connection that never completes its request
    # (a half-open upgrade): aiohttp's default holds it for an hour.
    app = web.Application(
        handler_args={"keepalive_timeout": config.server.http_handshake_timeout_s}
    )
    app[STATE] = state or ProxyState(config=config)
    app.cleanup_ctx.append(_embedded_backends)
    app.cleanup_ctx.append(_shared_resources)
    app.on_shutdown.append(_close_sessions)
    for path in WS_PATHS:
        app.router.add_get(path, websocket)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    add_web_routes(app, config)
    return app
