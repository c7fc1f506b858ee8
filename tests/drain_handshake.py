"""A replica drained while a client's handshake is held part way, for the drain tests
(docs/protocol.md, "Close codes"): an upstream whose dial (or a store write) a gate holds,
the drain run while it is held, and the refusal the client is then told."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from proxy.app import build_app
from proxy.config import Config
from proxy.reference.server import build_reference_app
from proxy.state import ProxyState
from tests.servers import Client, closed, connect, serve_app, ws_url


async def eventually(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.02)
    assert condition()


class Gate:
    """Holds the handshake, while shut, at ``at``: the upstream's dial (a turn-based
    upstream's, not its duplex probe), or a store write (``create``, ``save``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.at = "dial"
        self.shut = False
        self.reached = asyncio.Event()
        self.open = asyncio.Event()

    async def wait(self) -> None:
        self.reached.set()
        await self.open.wait()

    @web.middleware
    async def dial(self, request: web.Request, handler: Any) -> web.StreamResponse:
        duplex_dial = self.kind == "duplex" or "duplex" not in request.query
        if self.shut and self.at == "dial" and duplex_dial:
            await self.wait()
        response: web.StreamResponse = await handler(request)
        return response

    def store(self, write: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def held(*args: Any, **kwargs: Any) -> Any:
            if self.shut:
                await self.wait()
            return await write(*args, **kwargs)

        return held


@asynccontextmanager
async def gated_upstream(kind: str = "turn") -> AsyncIterator[tuple[str, Gate]]:
    gate = Gate(kind)
    upstream = build_reference_app(kind)
    upstream.middlewares.append(gate.dial)
    async with serve_app(upstream) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime", gate


async def drained_mid_handshake(
    config: Config, gate: Gate, at: str, first: Any, mp: pytest.MonkeyPatch, **query: str
) -> Client:
    """Replica b drains while ``first`` (sent on connecting) is held at ``at``; the
    client, once b has shut down and closed it with 1012."""
    state = ProxyState(config=config, replica_id="b")
    serving = serve_app(build_app(config, state))
    b = await serving.__aenter__()
    gate.at, gate.shut = at, True
    if at != "dial":
        mp.setattr(state.store, at, gate.store(getattr(state.store, at)))
    # A resume names no model: the handshake waits for it (proxy/handshake/client_session.py).
    async with connect(ws_url(b, model=None if first else "m", **query)) as c:
        if first is not None:
            await c.send(first)
        closing = asyncio.create_task(closed(c))
        await gate.reached.wait()
        shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
        await eventually(lambda: state.draining)
        gate.open.set()
        await shutdown
        assert await closing == 1012
    gate.shut = False
    return c


def refused(c: Client) -> None:
    kinds = [e.get("type") for e in c.events]
    assert "session.created" not in kinds and "session.resumed" not in kinds, kinds
    codes = [e["error"]["code"] for e in c.events if e.get("type") == "error"]
    assert codes == ["server_shutting_down"], codes
