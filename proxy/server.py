"""Run the proxy until SIGINT/SIGTERM, then drain: stop accepting, close clients with 1012."""

from __future__ import annotations

import asyncio
import signal
import uuid

from aiohttp import web

from proxy.app import STATE, build_app
from proxy.config import Config
from proxy.logging import configure_logging, get_logger
from proxy.state import ProxyState


async def serve(config: Config, host: str, port: int, ready: asyncio.Event | None = None) -> None:
    state = ProxyState(config=config, replica_id=uuid.uuid4().hex[:12])
    app = build_app(config, state)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        shutdown_timeout=config.server.drain_timeout_s,
        access_log=None,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port, shutdown_timeout=config.server.drain_timeout_s)
    await site.start()
    log = get_logger(replica_id=state.replica_id)
    bound = runner.addresses
    log.info(
        "listening",
        host=host,
        port=bound[0][1] if bound else port,
        routes=[r.model for r in config.routes],
        store=config.store.url.split("@")[-1],
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        log.info("draining", sessions=len(app[STATE].sessions))
        app[STATE].draining = True
        await runner.cleanup()
        log.info("stopped")


def run_server(config: Config, host: str | None = None, port: int | None = None) -> int:
    configure_logging(config.server.log_level)
    try:
        asyncio.run(
            serve(config, host or config.server.host, config.server.port if port is None else port)
        )
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        get_logger().error("cannot_listen", error=str(exc))
        return 1
    return 0
