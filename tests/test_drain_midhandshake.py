"""A resume or an opening still under way as its replica drains (docs/protocol.md,
"Close codes"). Before it stores or rotates anything it is refused with
``server_shutting_down`` and the token the client has still resumes elsewhere. Once it
has, the drain waits for it (``ClientSession.drain``), so the client is told the token
the store now holds (``session.resumed`` / ``session.created``) before its 1012, and
resumes elsewhere with it. Closed at once, the client kept a token a resume had
rotated away, or never learned the token of a session that was stored and handed on."""

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

pytestmark = [pytest.mark.redis]


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


def told(c: Client, kind: str) -> dict[str, Any]:
    kinds = [e.get("type") for e in c.events]
    assert kind in kinds, f"closed by the drain without its token: {kinds}"
    return next(e for e in c.events if e.get("type") == kind)


def refused(c: Client) -> None:
    kinds = [e.get("type") for e in c.events]
    assert "session.created" not in kinds and "session.resumed" not in kinds, kinds
    codes = [e["error"]["code"] for e in c.events if e.get("type") == "error"]
    assert codes == ["server_shutting_down"], codes


async def resumes_on(base: str, opening: dict[str, Any], **query: str) -> None:
    async with connect(ws_url(base, model=None, **query)) as c:
        await c.send(resume_of(opening))
        first = await c.recv()
        assert first["type"] == "session.resumed", first


@pytest.mark.parametrize("at", ["dial", "save"])
async def test_a_resume_drained_mid_handshake_keeps_a_token_that_resumes(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    async with gated_upstream() as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            async with connect(ws_url(a)) as c1:
                created = await c1.until("session.created")
            c2 = await drained_mid_handshake(config, gate, at, resume_of(created), monkeypatch)
            if at == "dial":  # nothing rotated yet: refused, its token unchanged
                refused(c2)
                await resumes_on(a, created)
            else:  # the rotation under way: told its new token
                resumed = told(c2, "session.resumed")
                assert resumed["resume_token"] != created["resume_token"]
                await resumes_on(a, resumed)


@pytest.mark.parametrize("at", ["dial", "create"])
async def test_a_session_opened_mid_drain_is_refused_or_told_its_token(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    async with gated_upstream() as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            c = await drained_mid_handshake(config, gate, at, None, monkeypatch)
            if at == "dial":  # nothing stored: refused
                refused(c)
            else:  # being stored: told its token, and it resumes elsewhere
                created = told(c, "session.created")
                assert created.get("resume_token")
                await resumes_on(a, created)


@pytest.mark.parametrize("at", ["dial", "create"])
async def test_a_passthrough_session_opened_mid_drain_is_refused_or_told_its_token(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    async with gated_upstream("duplex") as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            c = await drained_mid_handshake(config, gate, at, None, monkeypatch, duplex="1")
            if at == "dial":
                refused(c)
            else:  # bound in the store: told its upstream's token
                created = told(c, "session.created")
                assert created.get("resume_token")
                await resumes_on(a, created, duplex="1")
