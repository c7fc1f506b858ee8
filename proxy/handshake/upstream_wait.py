"""Dial an upstream that may be warming up: wait for it, and tell the client so.

vLLM-Omni holds a duplex WebSocket upgrade while its model warms up, up to 180 s,
then admits it (docs/fidelity.md, row 9). An upgrade still unanswered after
``HELD_AFTER_S`` on a server whose port accepts connections is taken to be held: the
dial then waits up to the route's ``warmup_wait_s`` instead of
``server.upstream_connect_timeout_s``, ``/readyz`` reports the route ``warming``,
and the client hears it is waiting (docs/protocol.md, "Capacity and warm-up"):

* a vLLM-Omni client (``?duplex=1`` or ``/v1/duplex``), or any client that asked
  with ``?waiting_events=1``, gets ``session.waiting`` now and every
  ``NOTICE_EVERY_S`` while the wait lasts;
* a GA client gets no event it does not know: WebSocket pings keep its connection
  alive, and ``session.created`` comes once the upstream admits the session.

A port that refuses connections is not warming: the usual connect timeout applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from proxy.connection import ClientConnection
from proxy.upstream import UpstreamLink, UpstreamUnavailable

HELD_AFTER_S = 1.0  # an upgrade unanswered this long on a live port is being held
NOTICE_EVERY_S = 5.0  # how often a waiting client hears it is still waiting
_TRUE = ("1", "true", "yes")


def hears_waiting(conn: ClientConnection) -> bool:
    """Whether this client is told of the wait with ``session.waiting``."""
    query, path = conn.request.query, conn.request.path
    if query.get("waiting_events", "").lower() in _TRUE:
        return True
    return path.endswith("/v1/duplex") or query.get("duplex", "").lower() in _TRUE


async def port_open(url: str, within_s: float) -> bool:
    """Whether the upstream's host accepts a TCP connection on its port."""
    parts = urlsplit(url)
    secure = parts.scheme in ("wss", "https")
    host, port = parts.hostname or "", parts.port or (443 if secure else 80)
    try:
        async with asyncio.timeout(within_s):
            _, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def dial_through_warmup(
    conn: ClientConnection,
    url: str,
    key: str | None,
    wait_s: float,
    dial_within: Callable[[float], Awaitable[UpstreamLink]],
) -> UpstreamLink:
    """``dial_within(timeout)``, waiting up to ``wait_s`` more for a held upgrade."""
    state = conn.state
    connect_s = state.config.server.upstream_connect_timeout_s
    started = time.monotonic()
    task = asyncio.ensure_future(dial_within(connect_s + wait_s))
    try:
        done, _ = await asyncio.wait({task}, timeout=min(HELD_AFTER_S, connect_s))
        if task in done:
            return task.result()
        if wait_s <= 0 or not await port_open(url, connect_s):
            left = connect_s - (time.monotonic() - started)
            done, _ = await asyncio.wait({task}, timeout=max(0.0, left))
            if task in done:
                return task.result()
            raise UpstreamUnavailable(f"upstream did not accept within {connect_s:.1f} s")
        return await _wait_held(conn, task, key, wait_s, started)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _wait_held(
    conn: ClientConnection,
    task: asyncio.Future[UpstreamLink],
    key: str | None,
    wait_s: float,
    started: float,
) -> UpstreamLink:
    facts = conn.state.upstreams.facts(key) if key is not None else None
    if facts is not None:
        facts.held += 1  # /readyz: the route's upstream is warming
    conn.log.info("upstream_warming", max_wait_s=wait_s)
    told = hears_waiting(conn)
    next_notice = 0.0
    try:
        while True:
            waited = time.monotonic() - started
            if waited >= next_notice:
                next_notice = waited + NOTICE_EVERY_S
                await _tell(conn, told, waited, wait_s)
            done, _ = await asyncio.wait({task}, timeout=1.0)
            if task in done:
                conn.log.info("upstream_warm", waited_s=round(time.monotonic() - started, 1))
                return task.result()
            if conn.client.ws.closed:
                raise UpstreamUnavailable("the client left while the upstream warmed up")
    finally:
        if facts is not None:
            facts.held -= 1


async def _tell(conn: ClientConnection, told: bool, waited_s: float, wait_s: float) -> None:
    if told:
        conn.client.send_event(
            {
                "type": "session.waiting",
                "reason": "upstream_warming_up",
                "waited_ms": int(waited_s * 1000),
                "max_wait_ms": int(wait_s * 1000),
            }
        )
        return
    with contextlib.suppress(Exception):  # a ping is only a keep-alive
        await conn.client.ws.ping()
