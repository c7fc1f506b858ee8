"""Build and run a reference backend: ``duplex``, ``duplex-no-barge-in`` or ``turn``.

These are what the proxy's tests, demo and benchmarks talk to in place of a
GPU vLLM-Omni 0.30.0 server.  ``/healthz`` answers 200 so deploy scripts can
wait for readiness.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator

from aiohttp import web

from proxy.logging import configure_logging, get_logger
from proxy.reference.duplex_app import DuplexBackend, add_duplex_routes
from proxy.reference.options import KIND_TURN, ReferenceOptions, check_kind
from proxy.reference.turn_app import TurnBackend, add_turn_routes
from proxy.reference.warmup import add_warmup

#: The app's duplex backend, for tests that look at what its sessions received.
DUPLEX_BACKEND = web.AppKey("duplex_backend", DuplexBackend)


async def _healthz(_: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def build_reference_app(
    kind: str,
    *,
    served_model: str | None = None,
    reply_ms: int = 4000,
    options: ReferenceOptions | None = None,
) -> web.Application:
    """An aiohttp app that speaks vLLM-Omni 0.30.0's wire protocol for ``kind``."""
    check_kind(kind)
    if reply_ms <= 0:
        raise ValueError("reply_ms must be positive")
    opts = options or ReferenceOptions()
    app = web.Application()
    app.router.add_get("/healthz", _healthz)
    if kind == KIND_TURN:
        add_turn_routes(
            app, TurnBackend(options=opts, reply_ms=reply_ms, served_model=served_model)
        )
    else:
        backend = DuplexBackend(kind, options=opts, reply_ms=reply_ms, served_model=served_model)
        add_duplex_routes(app, backend)
        app[DUPLEX_BACKEND] = backend
        add_warmup(app, opts.warmup_s)
    return app


@contextlib.asynccontextmanager
async def running_reference_backend(
    kind: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    served_model: str | None = None,
    reply_ms: int = 4000,
    options: ReferenceOptions | None = None,
) -> AsyncIterator[str]:
    """Serve a backend on the running loop (port 0: any free port); yields its base URL."""
    app = build_reference_app(kind, served_model=served_model, reply_ms=reply_ms, options=options)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        await runner.cleanup()


async def _serve(app: web.Application, host: str, port: int, mode: str) -> None:
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=5.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    log = get_logger(component="reference-backend", mode=mode)
    addresses = runner.addresses
    bound = addresses[0][1] if addresses else port
    log.info("listening", host=host, port=bound)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        await runner.cleanup()
        log.info("stopped")


def run_reference_backend(
    mode: str,
    *,
    host: str,
    port: int,
    served_model: str | None,
    reply_ms: int,
    log_level: str,
    options: ReferenceOptions | None = None,
) -> int:
    """Serve until SIGTERM/SIGINT; returns the process exit code."""
    configure_logging(log_level)
    try:
        app = build_reference_app(
            mode, served_model=served_model, reply_ms=reply_ms, options=options
        )
        asyncio.run(_serve(app, host, port, mode))
    except ValueError as exc:
        get_logger(component="reference-backend").error("bad_options", error=str(exc))
        return 2
    except OSError as exc:
        get_logger(component="reference-backend").error("cannot_listen", error=str(exc))
        return 1
    except KeyboardInterrupt:
        pass
    return 0
