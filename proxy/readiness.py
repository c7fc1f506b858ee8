"""What ``/readyz`` answers: draining, capacity, the store, and each route's upstream.

A replica is ready while it is not draining, has room, and at least one route is
usable. Each route's upstream is checked every ``readiness.check_interval_s``: an HTTP
GET of its ``health_path`` when the route names one (vLLM-Omni answers ``/health`` with
200 once the model is loaded), else a TCP connect. A route is

* ``ok``: the upstream answered;
* ``warming``: it answered the GET with something other than 2xx (still loading), it
  is holding a session's upgrade right now (vLLM-Omni does while its model warms up:
  ``proxy/handshake/upstream_wait.py``), or it has not been checked yet;
* ``unreachable``: no connection within ``readiness.check_timeout_s``;
* ``at_capacity``: its ``max_sessions`` are all taken, or its upstream's
  (``upstream_capacity``, shared by every route to that upstream: ``proxy/capacity.py``).

The body names routes by their pattern only: upstream URLs, hosts and headers are not
for unauthenticated callers.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from proxy.capacity import upstream_full, upstream_of
from proxy.config import Route
from proxy.logging import get_logger
from proxy.state import ProxyState

Status = Literal["ok", "warming", "unreachable", "at_capacity"]
Target = tuple[str, str, int, str | None]  # scheme, host, port, health path


def _target(url: str, health_path: str | None) -> Target | None:
    parts = urlsplit(url)
    if parts.hostname is None:
        return None
    secure = parts.scheme in ("wss", "https")
    port = parts.port or (443 if secure else 80)
    return ("https" if secure else "http", parts.hostname, port, health_path)


class Readiness:
    """The drain flag and the last check of every route's upstream."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state
        self.draining = False  # SIGTERM received: /readyz answers 503 from now on
        self._upstream: dict[str, Status] = {}  # route pattern -> last check
        self._task: asyncio.Task[None] | None = None
        self._log = get_logger(replica_id=state.replica_id)

    def start_drain(self) -> None:
        self.draining = True
        self.state.metrics.draining.set(1)

    # ------------------------------------------------------------------ checks
    async def _probe(self, target: Target) -> Status:
        scheme, host, port, path = target
        timeout = self.state.config.readiness.check_timeout_s
        if path is None:
            try:
                async with asyncio.timeout(timeout):
                    _, writer = await asyncio.open_connection(host, port)
            except (OSError, TimeoutError):
                return "unreachable"
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return "ok"
        http = self.state.http
        if http is None:
            return "warming"
        url = urlunsplit(
            (scheme, f"[{host}]:{port}" if ":" in host else f"{host}:{port}", path, "", "")
        )
        try:
            async with http.get(url, timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                return "ok" if 200 <= resp.status < 300 else "warming"
        except (aiohttp.ClientError, OSError, TimeoutError):
            return "unreachable"

    async def check(self) -> None:
        """Check every route's upstream once (routes sharing one are checked once)."""
        routes = self.state.config.routes
        targets: dict[str, Target | None] = {}
        for route in routes:
            kind = route.embedded_kind
            url = self.state.embedded_urls.get(kind) if kind is not None else route.upstream
            targets[route.model] = _target(url, route.health_path) if url else None
        unique = list({t for t in targets.values() if t is not None})
        statuses = await asyncio.gather(*(self._probe(t) for t in unique))
        results = dict(zip(unique, statuses, strict=True))
        checked: dict[str, Status] = {}
        for model, target in targets.items():
            checked[model] = results[target] if target is not None else "warming"
            if checked[model] != self._upstream.get(model):
                self._log.info("route_upstream", route=model, status=checked[model])
            self.state.metrics.route_up.labels(model).set(1 if checked[model] == "ok" else 0)
        for gone in set(self._upstream) - set(checked):
            with contextlib.suppress(KeyError):
                self.state.metrics.route_up.remove(gone)
        self._upstream = checked

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.state.config.readiness.check_interval_s)
            try:
                await self.check()
            except Exception:  # a check must never stop the checking
                self._log.exception("readiness_check_failed")

    async def start(self) -> None:
        await self.check()
        self._task = asyncio.create_task(self._loop(), name="readiness-checks")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    # ------------------------------------------------------------------ report
    def route_status(self, route: Route) -> Status:
        limit = route.max_sessions
        if limit is not None and self.state.occupied(route.model) >= limit:
            return "at_capacity"
        checked = self._upstream.get(route.model, "warming")
        if checked == "unreachable":
            return checked
        key = upstream_of(self.state, route)
        if key is not None and self.state.upstreams.warming(key):
            return "warming"
        return "at_capacity" if upstream_full(self.state, route) else checked

    async def report(self) -> tuple[int, dict[str, Any]]:
        """The HTTP status and body of ``/readyz``."""
        state = self.state
        draining = self.draining or state.draining
        routes = {r.model: self.route_status(r) for r in state.config.routes}
        usable = any(s == "ok" for s in routes.values())
        occupied = state.occupied()  # sessions, in their disconnect grace too; not sockets
        capacity = occupied < state.config.server.max_sessions
        ready = not draining and state.http is not None and capacity and usable
        body: dict[str, Any] = {
            "draining": draining,
            "sessions": occupied,
            "capacity": capacity,
            "routes": routes,
        }
        degraded: list[str] = []
        if state.store is not None:
            store_ok = await state.store.healthy()
            body["store"] = "ok" if store_ok else "unavailable"
            if not store_ok:
                # Live sessions keep talking; only resume is unavailable.
                degraded.append("session store unavailable: resume disabled")
        degraded += [f"route {m!r}: {s}" for m, s in routes.items() if s != "ok"]
        body["degraded"] = degraded
        status = "ready" if ready else "not_ready"
        if ready and degraded:
            status = "degraded"
        return (200 if ready else 503), {"status": status, **body}
