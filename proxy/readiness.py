"""What ``/readyz`` answers: draining, capacity, the store, and each route's upstream.

A replica is ready while it is not draining, has room, and at least one route is
usable. Each route's upstream is checked every ``readiness.check_interval_s``: an HTTP
GET of its ``health_path`` when the route names one (vLLM-Omni answers ``/health`` with
200 once the model is loaded, even while a duplex warm-up still holds upgrades), else a
TCP connect, or with ``readiness.upgrade_check`` a WebSocket upgrade. A route is

* ``ok``: the upstream answered;
* ``warming``: it answered the GET with something other than 2xx (still loading), held
  the check's upgrade, or is holding a session's upgrade now (vLLM-Omni does while its
  model warms up: ``proxy/handshake/upstream_wait.py``), or it is not checked yet;
* ``unreachable``: no connection within ``readiness.check_timeout_s``;
* ``at_capacity``: its ``max_sessions`` are all taken, or its upstream's
  (``upstream_capacity``, shared by every route to that upstream: ``proxy/capacity.py``).
  A session whose client hung up takes no slot here: a new session would take its
  (``proxy/emulated/slot_yield.py``), so one ended call does not take the replica out.

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
from proxy.handshake.upstream_wait import port_open
from proxy.logging import get_logger
from proxy.state import ProxyState
from proxy.upstream import close_within, with_query

Status = Literal["ok", "warming", "unreachable", "at_capacity"]
# scheme, host, port, health path, and the URL of an upgrade check (readiness.upgrade_check)
Target = tuple[str, str, int, str | None, str | None]


def _target(url: str, health_path: str | None, upgrade: bool) -> Target | None:
    parts = urlsplit(url)
    if parts.hostname is None:
        return None
    secure = parts.scheme in ("wss", "https")
    port = parts.port or (443 if secure else 80)
    # No model and autostart=0: vLLM-Omni opens no session before a session.update.
    check = with_query(url, {"duplex": "1", "autostart": "0"}) if upgrade else None
    return ("https" if secure else "http", parts.hostname, port, health_path, check)


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
    async def _upgrade(self, url: str, within_s: float) -> Status:
        """A WebSocket upgrade: answered is ``ok``; held on a live port (a warming
        vLLM-Omni holds duplex upgrades) is ``warming``."""
        http = self.state.http
        if http is None:
            return "warming"
        try:
            async with asyncio.timeout(within_s):
                ws = await http.ws_connect(url, compress=0)
        except aiohttp.WSServerHandshakeError:
            return "ok"  # it answered, if not with an upgrade: the dial will say more
        except TimeoutError:
            return "warming" if await port_open(url, within_s) else "unreachable"
        except (aiohttp.ClientError, OSError):
            return "unreachable"
        await close_within(ws)
        return "ok"

    async def _probe(self, target: Target) -> Status:
        scheme, host, port, path, upgrade = target
        timeout = self.state.config.readiness.check_timeout_s
        if upgrade is not None:
            return await self._upgrade(upgrade, timeout)
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
            upgrade = self.state.config.readiness.upgrade_check and route.health_path is None
            upgrade = upgrade and route.request_duplex
            targets[route.model] = _target(url, route.health_path, upgrade) if url else None
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
        if limit is not None and self.state.occupied(route.model, firm=True) >= limit:
            return "at_capacity"
        checked = self._upstream.get(route.model, "warming")
        if checked == "unreachable":
            return checked
        key = upstream_of(self.state, route)
        if key is not None and self.state.upstreams.warming(key):
            return "warming"
        return "at_capacity" if upstream_full(self.state, route, firm=True) else checked

    async def report(self) -> tuple[int, dict[str, Any]]:
        """The HTTP status and body of ``/readyz``."""
        state = self.state
        draining = self.draining or state.draining
        routes = {r.model: self.route_status(r) for r in state.config.routes}
        usable = any(s == "ok" for s in routes.values())
        occupied = state.occupied()  # sessions, in their disconnect grace too; not sockets
        capacity = state.occupied(firm=True) < state.config.server.max_sessions
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
