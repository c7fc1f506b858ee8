"""What the passthrough resume tests share (``tests/test_resume_passthrough_rebind*.py``,
``tests/test_resume_passthrough_unmark.py``): a store whose rebind writes go
unanswered (``Fault``), the store under test (memory or Redis), replicas in front of
a given upstream, and the client's steps (open, resume, be refused)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from proxy.app import build_app
from proxy.config import config_from_dict
from proxy.state import ProxyState
from proxy.store.base import SessionStore, StoreUnavailable
from tests.redis_server import RedisServer
from tests.servers import Client, closed, connect, serve_app, ws_url

DENIED = ("session_resume_denied", 1008)
TRY_AGAIN = ("session_resume_unavailable", 1013)
FAR = 2**50  # a mark's end (ms) no test outlives


# The writes that move a passthrough session's lease or token hash.
REBIND_WRITES = ("take_over", "update", "rebind")


class Fault:
    """The store's rebind writes go unanswered: the next ``once`` of them, or all of
    them until ``heal``; taking effect first if ``applied``."""

    def __init__(self, store: SessionStore, *, applied: bool, once: int = 0) -> None:
        self.applied, self.left, self.down = applied, once, once == 0
        self.refused = 0
        for name in REBIND_WRITES:
            setattr(store, name, self._wrapped(name, getattr(store, name)))

    def heal(self) -> None:
        self.down = False

    def _wrapped(self, name: str, real: Any) -> Any:
        async def write(*args: Any) -> Any:
            # A mark (``rebind_until_ms``) or a checkpoint is not a rebind.
            if name == "update" and "token_hash" not in args[2]:
                return await real(*args)
            if not self.down and self.left <= 0:
                return await real(*args)
            self.left -= 1
            self.refused += 1
            if self.applied:
                await real(*args)
            raise StoreUnavailable(f"{name}: no answer in time")

        return write


@asynccontextmanager
async def replicas_before(
    upstream: str,
    store_url: str,
    server: dict[str, Any] | None = None,
    names: tuple[str, ...] | None = None,
    **store: Any,
) -> AsyncIterator[list[tuple[str, ProxyState]]]:
    """Replicas ``names`` (unnamed: "a", and "b" on Redis) on one store, a passthrough
    route to ``upstream``; each one's base URL and state."""
    if names is None:
        names = ("a",) if store_url.startswith("memory") else ("a", "b")
    config = config_from_dict(
        {
            "routes": [{"model": "m", "upstream": upstream, "mode": "passthrough"}],
            "auth": {"mode": "none"},
            "server": server or {},
            # Timeouts only where the test makes them, not from a loaded machine.
            "store": {"url": store_url, "timeout_s": 1.0, **store},
        }
    )
    async with AsyncExitStack() as stack:
        out = []
        for name in names:
            state = ProxyState(config=config, replica_id=name)
            base = await stack.enter_async_context(serve_app(build_app(config, state)))
            out.append((base, state))
        yield out


@pytest.fixture(params=["memory", "redis"])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    request.applymarker(pytest.mark.redis)
    server: RedisServer = request.getfixturevalue("redis_server_session")
    return server.url


async def opened(base: str) -> tuple[str, str]:
    """A passthrough session opened and left (its client hung up); its id and token."""
    async with connect(ws_url(base, duplex="1")) as c:
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
        return created["session"]["id"], created["resume_token"]


async def resume(c: Client, sid: str, token: str) -> dict[str, Any]:
    """``session.resume`` as the first event; the first event back."""
    await c.send(
        {
            "type": "session.resume",
            "session_id": sid,
            "resume_token": token,
            "last_received_server_event_seq": 0,
        }
    )
    return await c.recv()


async def refused(base: str, sid: str, token: str) -> tuple[str, int | None]:
    """A resume that fails; its code and the connection's close code."""
    async with connect(ws_url(base, model=None)) as c:
        first = await resume(c, sid, token)
        assert first["type"] == "error", first
        return first["error"]["code"], await closed(c)


async def resumed(base: str, sid: str, token: str) -> str:
    """A resume that succeeds, its client then hanging up; the rotated token."""
    async with connect(ws_url(base, model=None)) as c:
        first = await resume(c, sid, token)
        assert first["type"] == "session.resumed", first
        assert first["resume_token"] != token
        new: str = first["resume_token"]
        return new


async def stored_hash(store: SessionStore, sid: str) -> str:
    record = await store.load(sid)
    assert record is not None
    return record.token_hash


async def has_id(store: SessionStore, sid: str, event_id: str) -> bool:
    record = await store.load(sid)
    assert record is not None
    return event_id in record.recent_event_ids


async def until(read: Callable[[], Awaitable[object]], value: object) -> None:
    """Until ``read()`` gives ``value`` (within 10 s)."""
    async with asyncio.timeout(10):
        while True:
            if await read() == value:
                return
            await asyncio.sleep(0.02)
