"""The in-process reference backends that ``embedded://KIND`` routes name.

Started with the app for the routes it has, and again for the kinds a reloaded config
adds; one keeps running while any session may still use it, until shutdown.

They run the strict preset (the stand-ins' default, ``docs/fidelity.md``), so the demo
behaves like vLLM-Omni 0.30.0, except for its session limit: a real server is configured
with its ``max_sessions``, and an embedded one is configured with this replica's
``[server] max_sessions`` (read when it starts), so it never refuses a session the proxy
admits.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from proxy.config import Config
from proxy.logging import get_logger
from proxy.reference.options import ReferenceOptions
from proxy.reference.server import build_reference_app
from proxy.state import ProxyState


def embedded_kinds(config: Config) -> set[str]:
    return {k for r in config.routes if (k := r.embedded_kind) is not None}


class EmbeddedBackends:
    def __init__(self, state: ProxyState) -> None:
        self.state = state
        self._runners: list[web.AppRunner] = []

    async def ensure(self, kinds: Iterable[str]) -> None:
        """Start each of ``kinds`` not running yet; its URL goes into the state."""
        for kind in sorted(set(kinds) - set(self.state.embedded_urls)):
            options = ReferenceOptions(max_sessions=self.state.config.server.max_sessions)
            app = build_reference_app(kind, options=options)
            runner = web.AppRunner(app, handle_signals=False, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            self.state.embedded_urls[kind] = f"ws://127.0.0.1:{port}/v1/realtime"
            self._runners.append(runner)
            get_logger().info(
                "embedded_backend_started",
                kind=kind,
                url=self.state.embedded_urls[kind],
                max_sessions=options.max_sessions,
            )

    async def close(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
