"""Session store contract (``proxy/store/base.py``), the records: saved and loaded whole,
never aliased, the token only ever hashed, sequence numbers never moved back, bounded
event ids, malformed ids refused, deleted; against memory and a real Redis."""

from __future__ import annotations

import secrets

import pytest
import redis.asyncio as aioredis

from proxy.config import StoreConfig
from proxy.store.base import LeaseLost, SessionStore, hash_token, token_matches
from proxy.store.redis import session_keys
from tests.redis_cluster import redis_cluster
from tests.redis_server import RedisServer
from tests.store_backends import MakeStore, make_store, raw_redis, store
from tests.stores import new_record, new_session, opened_store

__all__ = ["make_store", "raw_redis", "redis_cluster", "store"]  # fixtures, used by name


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


async def test_malformed_session_ids(store: SessionStore) -> None:
    for bad in ["", "}x", "a{b}", "with space", "x" * 129, "nul\x00"]:
        assert await store.load(bad) is None
        assert await store.events_after(bad, 0) is None
        with pytest.raises(ValueError):
            await store.create(new_record(session_id=bad))


async def test_delete(store: SessionStore) -> None:
    sid = (await new_session(store, [(1, "a")])).session_id
    assert await store.take_over(sid, "replica-b", 0) == 1
    with pytest.raises(LeaseLost):
        await store.delete(sid, 0)
    await store.delete(sid, 1)
    assert await store.load(sid) is None
    assert await store.events_after(sid, 0) is None
    await store.delete(sid, 1)
