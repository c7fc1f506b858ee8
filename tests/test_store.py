"""Session store contract (``proxy/store/base.py``): the same tests against memory and
a real Redis."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.crc import key_slot

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import memory as memory_module
from proxy.store import open_store
from proxy.store.base import (
    LeaseLost,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    hash_token,
    token_matches,
)
from proxy.store.memory import MemoryStore
from proxy.store.redis import RedisStore, session_keys
from shim.journal import ENTRY_BYTES
from tests.redis_cluster import redis_cluster
from tests.redis_server import RedisServer, redis_server, redis_server_session
from tests.stores import (
    assert_round_trip,
    assert_serves_a_fresh_session,
    new_record,
    new_session,
    opened_store,
)

__all__ = ["redis_cluster", "redis_server", "redis_server_session"]  # fixtures, used by name

MakeStore = Callable[..., Awaitable[SessionStore]]


def store_up(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("duplex_proxy_store_up")


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("cluster", marks=pytest.mark.redis),
    ]
)
async def make_store(request: pytest.FixtureRequest) -> AsyncIterator[MakeStore]:
    """Factory: ``await make_store(replay_max_bytes=10)`` builds a store with overrides.

    ``cluster`` is a real Redis Cluster (``tests/redis_cluster.py``): the same contract
    holds when a session's keys live on one of three masters.
    """
    url = "memory://"
    if request.param == "redis":
        url = request.getfixturevalue("redis_server_session").url
    elif request.param == "cluster":
        url = request.getfixturevalue("redis_cluster").url
    stores: list[SessionStore] = []

    async def make(**overrides: Any) -> SessionStore:
        store = await open_store(StoreConfig(url=url, **overrides), Metrics())
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.close()


@pytest.fixture
async def store(make_store: MakeStore) -> SessionStore:
    return await make_store()


@pytest.fixture
async def raw_redis(redis_server_session: RedisServer) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_server_session.url)
    yield client
    await client.aclose()


# --- records, tokens, fencing ---------------------------------------------------------


async def test_create_load_roundtrip(store: SessionStore) -> None:
    record = new_record(
        state={"voice": "alloy", "ledger": [{"item": "it_1", "played_ms": 1200}], "n": None},
        upstream={"url": "ws://up/v1/realtime", "session_id": "up_1", "resume_token": None},
        recent_event_ids=["ev_1", "ev_2"],
    )
    await store.create(record)
    loaded = await store.load(record.session_id)
    assert loaded == record
    assert loaded is not record
    assert await store.load("sess_unknown") is None


async def test_loaded_record_does_not_alias_store(store: SessionStore) -> None:
    record = new_record(state={"ledger": []})
    await store.create(record)
    record.state["ledger"].append("mutated after create")
    loaded = await store.load(record.session_id)
    assert loaded is not None and loaded.state == {"ledger": []}


async def test_token_is_only_stored_hashed(store: SessionStore) -> None:
    token = secrets.token_urlsafe(24)
    record = new_record(token_hash=hash_token(token))
    await store.create(record)
    loaded = await store.load(record.session_id)
    assert loaded is not None
    assert loaded.token_hash != token
    assert token_matches(token, loaded.token_hash)
    assert not token_matches(token + "x", loaded.token_hash)


@pytest.mark.redis
async def test_redis_keys_never_hold_the_raw_token(
    redis_server_session: RedisServer, raw_redis: aioredis.Redis
) -> None:
    token = secrets.token_urlsafe(24)
    record = new_record(token_hash=hash_token(token))
    async with opened_store(StoreConfig(url=redis_server_session.url)) as store:
        await store.create(record)
        await store.append_events(record.session_id, 0, [(1, '{"type":"x"}')], 0)
    rec_key, log_key = session_keys(record.session_id)
    rec = await raw_redis.hgetall(rec_key)
    log = await raw_redis.xrange(log_key)
    dump = repr(rec).encode() + repr(log).encode()
    assert rec and log
    assert token.encode() not in dump
    assert hash_token(token).encode() in dump


async def test_create_is_idempotent_for_its_own_token(store: SessionStore) -> None:
    record = new_record()
    await store.create(record)
    await store.create(record)  # a retry after an ambiguous failure
    with pytest.raises(LeaseLost):
        await store.create(new_record(session_id=record.session_id))
    assert await store.load(record.session_id) == record


async def test_take_over_fences_the_stale_owner(store: SessionStore) -> None:
    record = await new_session(store, [(1, "a")])
    sid = record.session_id
    assert await store.take_over(sid, "replica-b", 0) == 1
    with pytest.raises(LeaseLost):
        await store.save(record)  # still at epoch 0
    with pytest.raises(LeaseLost):
        await store.append_events(sid, 0, [(2, "b")], 0)
    with pytest.raises(LeaseLost):
        await store.delete(sid, 0)
    with pytest.raises(LeaseLost):
        await store.take_over(sid, "replica-c", 0)
    loaded = await store.load(sid)
    assert loaded is not None
    assert (loaded.epoch, loaded.owner, loaded.last_seq) == (1, "replica-b", 1)
    loaded.state = {"resumed": True}
    await store.save(loaded)
    await store.append_events(sid, 1, [(2, "b")], 0)
    assert await store.events_after(sid, 0) == [(1, "a"), (2, "b")]
    assert await store.take_over(sid, "replica-a", 1) == 2


async def test_take_over_of_unknown_session_is_lease_lost(store: SessionStore) -> None:
    with pytest.raises(LeaseLost):
        await store.take_over("sess_unknown", "replica-b", 0)
    with pytest.raises(LeaseLost):
        await store.save(new_record())
    with pytest.raises(LeaseLost):
        await store.append_events("sess_unknown", 0, [], 0)
    await store.delete("sess_unknown", 0)  # deleting what is gone is fine


async def test_racing_take_overs_exactly_one_wins(make_store: MakeStore) -> None:
    # Several store objects model several replicas (for Redis: separate pools).
    replicas = [await make_store() for _ in range(4)]
    for _ in range(30):
        record = new_record()
        await replicas[0].create(record)
        results = await asyncio.gather(
            *(replicas[i % 4].take_over(record.session_id, f"replica-{i}", 0) for i in range(8)),
            return_exceptions=True,
        )
        winners = [r for r in results if not isinstance(r, BaseException)]
        assert winners == [1]
        assert all(isinstance(r, LeaseLost) for r in results if r not in winners)
        loaded = await replicas[0].load(record.session_id)
        assert loaded is not None and loaded.epoch == 1


async def test_save_never_moves_sequence_numbers_back(store: SessionStore) -> None:
    record = await new_session(store, [(1, "a"), (2, "b"), (3, "c")], acked=2)
    sid = record.session_id
    record.state = {"x": 1}  # a snapshot taken before those events
    await store.save(record)
    loaded = await store.load(sid)
    assert loaded is not None
    assert (loaded.acked_seq, loaded.last_seq, loaded.state) == (2, 3, {"x": 1})


async def test_recent_event_ids_are_bounded(make_store: MakeStore) -> None:
    store = await make_store(recent_event_ids=3)
    record = new_record(recent_event_ids=[f"ev_{i}" for i in range(10)])
    await store.create(record)
    loaded = await store.load(record.session_id)
    assert loaded is not None and loaded.recent_event_ids == ["ev_7", "ev_8", "ev_9"]
    loaded.recent_event_ids += ["ev_10"]
    await store.save(loaded)
    again = await store.load(record.session_id)
    assert again is not None and again.recent_event_ids == ["ev_8", "ev_9", "ev_10"]


async def test_update_writes_only_its_fields_and_is_fenced(store: SessionStore) -> None:
    record = new_record(state={"big": "x" * 100}, recent_event_ids=["ev_a"])
    sid = record.session_id
    await store.create(record)
    new_hash = hash_token("rotated")
    await store.update(sid, 0, {"token_hash": new_hash})
    loaded = await store.load(sid)
    assert loaded is not None
    assert (loaded.token_hash, loaded.state, loaded.recent_event_ids) == (
        new_hash,
        {"big": "x" * 100},
        ["ev_a"],
    )
    for forbidden in ({"epoch": 5}, {"owner": "x"}, {"last_seq": 9}, {"nope": 1}):
        with pytest.raises(ValueError):
            await store.update(sid, 0, forbidden)
    assert await store.take_over(sid, "replica-b", 0) == 1
    with pytest.raises(LeaseLost):  # a stale epoch writes nothing
        await store.update(sid, 0, {"token_hash": record.token_hash})
    loaded = await store.load(sid)
    assert loaded is not None and loaded.token_hash == new_hash


async def test_add_event_ids_appends_new_ones_bounded_and_fenced(make_store: MakeStore) -> None:
    store = await make_store(recent_event_ids=4)
    record = new_record(recent_event_ids=["ev_0", "ev_1"])
    sid = record.session_id
    await store.create(record)
    await store.add_event_ids(sid, 0, ["ev_1", "ev_2"])
    await store.add_event_ids(sid, 0, ["ev_3", "ev_4"])
    loaded = await store.load(sid)
    assert loaded is not None and loaded.recent_event_ids == ["ev_1", "ev_2", "ev_3", "ev_4"]
    assert loaded.token_hash == record.token_hash
    await store.take_over(sid, "replica-b", 0)
    with pytest.raises(LeaseLost):
        await store.add_event_ids(sid, 0, ["ev_5"])
    loaded = await store.load(sid)
    assert loaded is not None and "ev_5" not in loaded.recent_event_ids


async def test_malformed_session_ids(store: SessionStore) -> None:
    for bad in ["", "}x", "a{b}", "with space", "x" * 129, "nul\x00"]:
        assert await store.load(bad) is None
        assert await store.events_after(bad, 0) is None
        with pytest.raises(ValueError):
            await store.create(new_record(session_id=bad))


# --- replay log ------------------------------------------------------------------------


async def test_events_after_in_order_and_idempotent(store: SessionStore) -> None:
    sid = (await new_session(store)).session_id
    assert await store.events_after(sid, 0) == []
    await store.append_events(sid, 0, [(1, "a"), (2, "b")], 0)
    await store.append_events(sid, 0, [(2, "b"), (3, "c")], 0)  # retried batch overlaps
    await store.append_events(sid, 0, [(4, "ünïcode ✓")], 0)
    assert await store.events_after(sid, 0) == [(1, "a"), (2, "b"), (3, "c"), (4, "ünïcode ✓")]
    assert await store.events_after(sid, 2) == [(3, "c"), (4, "ünïcode ✓")]
    assert await store.events_after(sid, 4) == []
    assert await store.events_after(sid, 9) == []
    loaded = await store.load(sid)
    assert loaded is not None and loaded.last_seq == 4


async def test_acks_trim_and_leave_a_floor(store: SessionStore) -> None:
    sid = (await new_session(store, [(i, f"e{i}") for i in range(1, 6)])).session_id
    await store.append_events(sid, 0, [], 3)  # a bare ack
    assert await store.events_after(sid, 3) == [(4, "e4"), (5, "e5")]
    assert await store.events_after(sid, 2) is None  # 3 was trimmed: a gap
    await store.append_events(sid, 0, [], 1)  # a late, older ack changes nothing
    loaded = await store.load(sid)
    assert loaded is not None and loaded.acked_seq == 3
    assert await store.events_after(sid, 3) == [(4, "e4"), (5, "e5")]


async def test_byte_bound_drops_oldest(make_store: MakeStore) -> None:
    # Each entry counts its UTF-8 bytes and ENTRY_BYTES, as the session's own log does.
    store = await make_store(replay_max_bytes=2 * ENTRY_BYTES + 10)
    sid = (await new_session(store, [(1, "éé"), (2, "éé")])).session_id  # 4 UTF-8 bytes each
    assert await store.events_after(sid, 0) == [(1, "éé"), (2, "éé")]
    await store.append_events(sid, 0, [(3, "éé")], 0)  # 12 bytes > 10
    assert await store.events_after(sid, 0) is None
    assert await store.events_after(sid, 1) == [(2, "éé"), (3, "éé")]
    await store.append_events(sid, 0, [(4, "x" * (ENTRY_BYTES + 11))], 0)  # alone over budget
    assert await store.events_after(sid, 3) is None
    assert await store.events_after(sid, 4) == []
    await store.append_events(sid, 0, [(5, "ok")], 0)
    assert await store.events_after(sid, 4) == [(5, "ok")]


# --- time: the store's own clock, never a sleep ------------------------------------------
# The memory store takes an injectable clock. The Redis store's time is the server's
# (``TIME`` for log ages, ``PEXPIRE`` for the grace TTL), so "time passes" there by
# moving the server-side state back: every key's TTL shrinks and every log entry's
# ``t`` gets older by the same amount, which is exactly what waiting would do.


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


async def test_delete(store: SessionStore) -> None:
    sid = (await new_session(store, [(1, "a")])).session_id
    assert await store.take_over(sid, "replica-b", 0) == 1
    with pytest.raises(LeaseLost):
        await store.delete(sid, 0)
    await store.delete(sid, 1)
    assert await store.load(sid) is None
    assert await store.events_after(sid, 0) is None
    await store.delete(sid, 1)


# --- open_store -----------------------------------------------------------------------


async def test_open_store_memory() -> None:
    metrics = Metrics()
    store = await open_store(StoreConfig(), metrics)
    assert isinstance(store, MemoryStore)
    assert await store.healthy()
    assert store_up(metrics) == 1
    await store.close()
    with pytest.raises(ValueError):
        await open_store(StoreConfig(url="mongodb://x"))


@pytest.mark.redis
async def test_open_store_over_a_unix_socket(redis_server_session: RedisServer) -> None:
    async with opened_store(StoreConfig(url=redis_server_session.unix_url)) as store:
        assert isinstance(store, RedisStore)
        assert await store.healthy()
        await assert_round_trip(store)


# --- Redis specifics: key layout and TTL ----------------------------------------------


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


# --- Redis outages ----------------------------------------------------------------------


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


async def test_the_memory_store_copies_only_the_fields_an_update_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A checkpoint writes what changed: the instructions it did not write are not
    copied again (they may be megabytes, at every flush), and what it writes is."""
    store = MemoryStore(StoreConfig())
    instructions = "i" * 100_000
    record = new_record(static={"instructions": instructions})
    await store.create(record)
    dumped: list[int] = []
    real = memory_module.orjson.dumps
    monkeypatch.setattr(
        memory_module.orjson, "dumps", lambda v: dumped.append(len(real(v))) or real(v)
    )
    state = {"seq": 1, "x": [1, 2]}
    await store.update(record.session_id, record.epoch, {"state": state})
    assert dumped and max(dumped) < 1000, dumped
    state["x"].append(3)  # the caller's object is not the stored one
    monkeypatch.undo()
    loaded = await store.load(record.session_id)
    assert loaded is not None
    assert loaded.state == {"seq": 1, "x": [1, 2]}
    assert loaded.static == {"instructions": instructions}
