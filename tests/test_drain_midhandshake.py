"""A resume or an opening still under way as its replica drains: the drain waits for
it to end (``ClientSession.drain``), so the client is told the token the store now
holds (``session.resumed`` / ``session.created``) before its 1012, and resumes
elsewhere with it (docs/protocol.md, "Resume"). Closed at once, the client kept a
token a resume had rotated away, or never learned the token of a session that was
stored and handed on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from proxy.app import build_app
from proxy.config import Config
from proxy.reference.server import build_reference_app
from proxy.state import ProxyState
from tests.redis_server import RedisServer
from tests.servers import (
    Client,
    closed,
    connect,
    proxy_with_state,
    resume_of,
    serve_app,
    store_config,
    ws_url,
)


async def eventually(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.02)
    assert condition()


class Gate:
    """Holds the upstream's dials while shut (a turn-based one's: not its duplex probe)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.shut = False
        self.dialled = asyncio.Event()
        self.open = asyncio.Event()

    @web.middleware
    async def hold(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.shut and (self.kind == "duplex" or "duplex" not in request.query):
            self.dialled.set()
            await self.open.wait()
        response: web.StreamResponse = await handler(request)
        return response


@asynccontextmanager
async def gated_upstream(kind: str = "turn") -> AsyncIterator[tuple[str, Gate]]:
    gate = Gate(kind)
    upstream = build_reference_app(kind)
    upstream.middlewares.append(gate.hold)
    async with serve_app(upstream) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime", gate


async def drained_mid_handshake(config: Config, gate: Gate, first: Any, **query: str) -> Client:
    """Replica b drains while ``first`` (sent on connecting) waits on the upstream;
    the client, once b has shut down and closed it with 1012."""
    state = ProxyState(config=config, replica_id="b")
    serving = serve_app(build_app(config, state))
    b = await serving.__aenter__()
    gate.shut = True
    # A resume names no model: the handshake waits for it (proxy/handshake/client_session.py).
    async with connect(ws_url(b, model=None if first else "m", **query)) as c:
        if first is not None:
            await c.send(first)
        closing = asyncio.create_task(closed(c))
        await gate.dialled.wait()
        shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
        await eventually(lambda: state.draining)
        gate.open.set()
        await shutdown
        assert await closing == 1012
    gate.shut = False
    return c


def told(c: Client, kind: str) -> dict[str, Any]:
    kinds = [e.get("type") for e in c.events]
    assert kind in kinds, f"closed by the drain without its token: {kinds}"
    return next(e for e in c.events if e.get("type") == kind)


async def resumes_on(base: str, opening: dict[str, Any], **query: str) -> None:
    async with connect(ws_url(base, model=None, **query)) as c:
        await c.send(resume_of(opening))
        first = await c.recv()
        assert first["type"] == "session.resumed", first


@pytest.mark.redis
async def test_a_resume_drained_mid_handshake_is_told_its_new_token(
    redis_server_session: RedisServer,
) -> None:
    async with gated_upstream() as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            async with connect(ws_url(a)) as c1:
                created = await c1.until("session.created")
            c2 = await drained_mid_handshake(config, gate, resume_of(created))
            resumed = told(c2, "session.resumed")
            assert resumed["resume_token"] != created["resume_token"]  # rotated
            await resumes_on(a, resumed)


@pytest.mark.redis
async def test_a_session_opened_mid_drain_is_told_its_token(
    redis_server_session: RedisServer,
) -> None:
    async with gated_upstream() as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            c = await drained_mid_handshake(config, gate, None)
            created = told(c, "session.created")
            assert created.get("resume_token")  # stored and handed on: resumable
            await resumes_on(a, created)


@pytest.mark.redis
async def test_a_passthrough_session_opened_mid_drain_is_told_its_token(
    redis_server_session: RedisServer,
) -> None:
    async with gated_upstream("duplex") as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            c = await drained_mid_handshake(config, gate, None, duplex="1")
            created = told(c, "session.created")
            assert created.get("resume_token")  # bound in the store: resumable
            await resumes_on(a, created, duplex="1")
