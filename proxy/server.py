"""Run the proxy until a signal, then drain; reload the config on SIGHUP.

The drain, in order (``deploy/README.md``):

1. SIGTERM: ``/readyz`` answers 503 at once, so the load balancer stops choosing
   this replica; sessions are still accepted for ``drain.readiness_delay_s`` while
   that news travels (SIGINT, or a second signal, skips the wait);
2. the listening socket closes and new sessions and resumes are refused;
3. every session is persisted and its client closed with 1012 (it resumes on
   another replica), within ``server.drain_timeout_s``;
4. the process exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from proxy.app import EMBEDDED, READINESS, build_app
from proxy.config import Config
from proxy.config_reload import ConfigReloader
from proxy.embedded import embedded_kinds
from proxy.logging import configure_logging, get_logger
from proxy.state import ProxyState


class _Signals:
    """The stop signals received so far (the first starts the drain)."""

    def __init__(self) -> None:
        self.first: signal.Signals | None = None
        self.stop = asyncio.Event()
        self.again = asyncio.Event()

    def received(self, sig: signal.Signals) -> None:
        if self.first is None:
            self.first = sig
            self.stop.set()
        else:
            self.again.set()


async def _readiness_delay(signals: _Signals, delay_s: float) -> None:
    if signals.first != signal.SIGTERM or delay_s <= 0:
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(delay_s):
            await signals.again.wait()


async def serve(
    config: Config,
    host: str,
    port: int,
    ready: asyncio.Event | None = None,
    config_path: str | Path | None = None,
    reuse_port: bool = False,
) -> None:
    state = ProxyState(config=config, replica_id=uuid.uuid4().hex[:12])
    app = build_app(config, state)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        shutdown_timeout=config.server.drain_timeout_s,
        access_log=None,
    )
    await runner.setup()
    site = web.TCPSite(
        runner,
        host,
        port,
        shutdown_timeout=config.server.drain_timeout_s,
        reuse_port=reuse_port or None,  # a worker beside others (proxy/workers.py)
    )
    await site.start()
    # What start-up allocated (config, libraries, the app) lives as long as the
    # process: frozen, a full collection no longer walks it, pausing every session.
    gc.collect()
    gc.freeze()
    log = get_logger(replica_id=state.replica_id)
    bound = runner.addresses
    log.info(
        "listening",
        host=host,
        port=bound[0][1] if bound else port,
        routes=[r.model for r in config.routes],
        store=config.store.url.split("@")[-1],
    )
    loop = asyncio.get_running_loop()
    signals = _Signals()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, signals.received, sig)
    tasks: set[asyncio.Task[object]] = set()
    if config_path is not None:

        async def prepare(new: Config) -> None:
            await app[EMBEDDED].ensure(embedded_kinds(new))

        reloader = ConfigReloader(Path(config_path), state, prepare, app[READINESS].check)

        def on_hup() -> None:
            task = asyncio.create_task(reloader.reload("SIGHUP"))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        loop.add_signal_handler(signal.SIGHUP, on_hup)
        tasks.add(asyncio.create_task(reloader.watch(), name="config-watch"))
    else:
        # Defaults and environment only: nothing to re-read, and SIGHUP must not kill.
        loop.add_signal_handler(signal.SIGHUP, log.warning, "config_reload_unavailable")
    if ready is not None:
        ready.set()
    try:
        await signals.stop.wait()
        app[READINESS].start_drain()
        delay = state.config.drain.readiness_delay_s
        log.info("drain_started", signal=str(signals.first), readiness_delay_s=delay)
        await _readiness_delay(signals, delay)
    finally:
        for task in tasks:
            task.cancel()
        log.info("draining", sessions=len(state.sessions), live=len(state.live))
        state.draining = True
        await runner.cleanup()
        log.info("stopped")


def loop_factory(kind: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop ``server.event_loop`` names (None: asyncio's own)."""
    if kind == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return None


def run_server(
    config: Config,
    host: str | None = None,
    port: int | None = None,
    config_path: str | Path | None = None,
    reuse_port: bool = False,
) -> int:
    configure_logging(config.server.log_level)
    try:
        with asyncio.Runner(loop_factory=loop_factory(config.server.event_loop)) as loop:
            loop.run(
                serve(
                    config,
                    host or config.server.host,
                    config.server.port if port is None else port,
                    config_path=config_path,
                    reuse_port=reuse_port,
                )
            )
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        get_logger().error("cannot_listen", error=str(exc))
        return 1
    if reuse_port:
        # A worker (proxy/workers.py) has drained: a signal its parent forwards late
        # must not turn its clean exit into a death by signal.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    return 0
