"""The Redis store's own matters: opened over a unix socket, its keys under one hash tag
and expiring, and outages (killed, hung, down at start, restarted): every call
unavailable meanwhile, the ``store_up`` gauge says so, and it recovers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
import redis.asyncio as aioredis
from redis.crc import key_slot

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store.base import SessionRecord, SessionStore, StoreUnavailable
from proxy.store.redis import RedisStore, session_keys
from tests.redis_server import RedisServer
from tests.store_backends import raw_redis, store_up
from tests.stores import (
    assert_round_trip,
    assert_serves_a_fresh_session,
    new_record,
    new_session,
    opened_store,
)

__all__ = ["raw_redis"]  # fixtures, used by name


@pytest.mark.redis
async def test_open_store_over_a_unix_socket(redis_server_session: RedisServer) -> None:
    async with opened_store(StoreConfig(url=redis_server_session.unix_url)) as store:
        assert isinstance(store, RedisStore)
        assert await store.healthy()
        await assert_round_trip(store)


@pytest.mark.redis
async def test_keys_share_one_hash_tag_and_expire(
    redis_server_session: RedisServer, raw_redis: aioredis.Redis
) -> None:
    async with opened_store(
        StoreConfig(url=redis_server_session.url, disconnect_grace_s=30)
    ) as store:
        sid = (await new_session(store, [(1, "a"), (2, "b")])).session_id
    keys = sorted([k async for k in raw_redis.scan_iter(match=f"dxp:{{{sid}}}:*")])
    assert keys == [f"dxp:{{{sid}}}:log".encode(), f"dxp:{{{sid}}}:rec".encode()]
    assert len({key_slot(k) for k in keys}) == 1
    # An id starting with "}" would empty the tag and split the slots: such ids are
    # refused (test_malformed_session_ids).
    assert len({key_slot(k.encode()) for k in session_keys("}odd")}) == 2
    for key in keys:
        assert 0 < await raw_redis.pttl(key) <= 30_000
    entries = await raw_redis.xrange(f"dxp:{{{sid}}}:log")
    assert [e[0] for e in entries or []] == [b"1-0", b"2-0"]


async def assert_all_unavailable(store: SessionStore, record: SessionRecord) -> None:
    sid = record.session_id
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.create(new_record()),
        lambda: store.load(sid),
        lambda: store.take_over(sid, "replica-b", 0),
        lambda: store.save(record),
        lambda: store.append_events(sid, 0, [(9, "x")], 0),
        lambda: store.events_after(sid, 0),
        lambda: store.delete(sid, 0),
    ]
    for call in calls:
        with pytest.raises(StoreUnavailable):
            await call()
    assert not await store.healthy()


@pytest.mark.redis
async def test_redis_killed_then_restarted(redis_server: RedisServer) -> None:
    metrics = Metrics()
    async with opened_store(StoreConfig(url=redis_server.url), metrics) as store:
        record = new_record()
        await store.create(record)
        assert store_up(metrics) == 1
        redis_server.kill()
        await assert_all_unavailable(store, record)
        assert store_up(metrics) == 0
        redis_server.start()
        assert await store.healthy()
        assert store_up(metrics) == 1
        # Nothing was persisted; the same store object serves new sessions at once.
        assert await store.load(record.session_id) is None
        await assert_serves_a_fresh_session(store)


@pytest.mark.redis
async def test_redis_hung_calls_time_out(redis_server: RedisServer) -> None:
    metrics = Metrics()
    async with opened_store(StoreConfig(url=redis_server.url, timeout_s=0.2), metrics) as store:
        record = new_record()
        await store.create(record)
        redis_server.pause()  # accepts nothing, answers nothing: only timeouts help
        await assert_all_unavailable(store, record)
        assert store_up(metrics) == 0
        redis_server.resume()
        assert await store.healthy()
        # Commands sent while it hung may still run once it wakes (a timeout is
        # ambiguous), so go on with a fresh session.
        await assert_serves_a_fresh_session(store)


@pytest.mark.redis
async def test_store_opens_while_redis_is_down(redis_server: RedisServer) -> None:
    redis_server.kill()
    metrics = Metrics()
    async with opened_store(StoreConfig(url=redis_server.url), metrics) as store:
        assert not await store.healthy()
        assert store_up(metrics) == 0
        redis_server.start()
        assert await store.healthy()
        await assert_round_trip(store)


@pytest.mark.redis
@pytest.mark.parametrize("how", ["kill", "stop"])
async def test_first_calls_after_a_restart_succeed(redis_server: RedisServer, how: str) -> None:
    """Pooled connections go stale when Redis restarts; each is retried once, fresh."""
    async with opened_store(StoreConfig(url=redis_server.url), Metrics()) as store:
        # Several pooled connections, all of which the restart leaves stale.
        await asyncio.gather(*(store.create(new_record()) for _ in range(4)))
        redis_server.kill() if how == "kill" else redis_server.stop()
        redis_server.start()
        record = new_record()
        await store.create(record)  # the very first call, no health check before it
        results = await asyncio.gather(*(store.load(record.session_id) for _ in range(4)))
        assert results == [record] * 4
        assert await store.take_over(record.session_id, "replica-b", 0) == 1
