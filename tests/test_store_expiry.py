"""Session store contract (``proxy/store/base.py``), time: the replay log's age bound and a
session's expiry after its grace, on the store's own clock (never a sleep), against
memory and a real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from proxy.config import StoreConfig
from proxy.store import open_store
from proxy.store.base import LeaseLost, SessionStore
from proxy.store.memory import MemoryStore
from tests.stores import new_record, new_session


class Clocked:
    """A store and a way to make ``seconds`` pass for it."""

    def __init__(self, store: SessionStore, advance: Callable[[float], Awaitable[None]]) -> None:
        self.store = store
        self.advance = advance


MakeClocked = Callable[..., Awaitable[Clocked]]


async def _age_redis(client: aioredis.Redis, seconds: float) -> None:
    shift_ms = round(seconds * 1000)
    keys = [k async for k in client.scan_iter(match="dxp:*")]
    for key in keys:
        ttl = int(await client.pttl(key))
        if key.endswith(b":log"):
            entries = await client.xrange(key)
            await client.delete(key)
            for entry_id, kv in entries or []:
                aged = {**kv, b"t": int(kv[b"t"]) - shift_ms}
                await client.xadd(key, aged, id=entry_id)
        if ttl >= 0 and await client.exists(key):
            # A TTL that runs out in the meantime deletes the key, as Redis would.
            await client.pexpire(key, max(0, ttl - shift_ms))


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def make_clocked(request: pytest.FixtureRequest) -> AsyncIterator[MakeClocked]:
    stores: list[SessionStore] = []
    clients: list[aioredis.Redis] = []

    async def make(**overrides: Any) -> Clocked:
        if request.param == "memory":
            now = [1000.0]

            async def advance_memory(seconds: float) -> None:
                now[0] += seconds

            store: SessionStore = MemoryStore(StoreConfig(**overrides), clock=lambda: now[0])
            stores.append(store)
            return Clocked(store, advance_memory)
        url = request.getfixturevalue("redis_server_session").url
        store = await open_store(StoreConfig(url=url, **overrides))
        client = aioredis.Redis.from_url(url)
        stores.append(store)
        clients.append(client)

        async def advance_redis(seconds: float) -> None:
            await _age_redis(client, seconds)

        return Clocked(store, advance_redis)

    yield make
    for store in stores:
        await store.close()
    for client in clients:
        await client.aclose()


async def test_age_bound_on_write(make_clocked: MakeClocked) -> None:
    clocked = await make_clocked(replay_max_age_s=60, disconnect_grace_s=600)
    store = clocked.store
    sid = (await new_session(store, [(1, "a"), (2, "b")])).session_id
    await clocked.advance(59)
    await store.append_events(sid, 0, [(3, "c")], 0)
    assert await store.events_after(sid, 0) == [(1, "a"), (2, "b"), (3, "c")]
    await clocked.advance(2)  # 1 and 2 are now 61 s old, 3 is 2 s old
    await store.append_events(sid, 0, [(4, "d")], 0)
    assert await store.events_after(sid, 0) is None
    assert await store.events_after(sid, 1) is None
    assert await store.events_after(sid, 2) == [(3, "c"), (4, "d")]


async def test_age_bound_on_read_without_writes(make_clocked: MakeClocked) -> None:
    clocked = await make_clocked(replay_max_age_s=60, disconnect_grace_s=600)
    store = clocked.store
    sid = (await new_session(store, [(1, "a"), (2, "b")])).session_id
    await clocked.advance(59)
    assert await store.events_after(sid, 0) == [(1, "a"), (2, "b")]
    await clocked.advance(2)
    assert await store.events_after(sid, 0) is None
    assert await store.events_after(sid, 2) == []


async def test_session_expires_after_grace(make_clocked: MakeClocked) -> None:
    clocked = await make_clocked(disconnect_grace_s=30)
    store = clocked.store
    sid = (await new_session(store, [(1, "a")])).session_id
    await clocked.advance(29)
    assert await store.load(sid) is not None
    assert await store.events_after(sid, 0) == [(1, "a")]
    await clocked.advance(2)
    assert await store.load(sid) is None
    assert await store.events_after(sid, 0) is None
    with pytest.raises(LeaseLost):
        await store.take_over(sid, "replica-b", 0)
    await store.create(new_record(session_id=sid))  # the id is free again


async def test_every_write_refreshes_expiry(make_clocked: MakeClocked) -> None:
    clocked = await make_clocked(disconnect_grace_s=30)
    store = clocked.store
    sid = (await new_session(store)).session_id
    for _ in range(3):
        await clocked.advance(20)
        await store.append_events(sid, 0, [], 0)  # a heartbeat keeps the lease alive
    await store.append_events(sid, 0, [(1, "a")], 0)
    await clocked.advance(20)  # 80 s since create, 20 s since the last write
    assert await store.load(sid) is not None
    assert await store.events_after(sid, 0) == [(1, "a")]
    await clocked.advance(11)  # 31 s since the last write
    assert await store.load(sid) is None


async def test_reads_do_not_refresh_expiry(make_clocked: MakeClocked) -> None:
    clocked = await make_clocked(disconnect_grace_s=30)
    store = clocked.store
    sid = (await new_session(store)).session_id
    for _ in range(3):
        await clocked.advance(9)
        assert await store.load(sid) is not None
        assert await store.events_after(sid, 0) == []
    await clocked.advance(4)  # 31 s since the only write
    assert await store.load(sid) is None
