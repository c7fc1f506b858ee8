"""Session store contract (``proxy/store/base.py``), the fencing: a take-over fences the
stale owner, exactly one of racing take-overs wins, and updates and event ids are written
only under the current lease; against memory and a real Redis."""

from __future__ import annotations

import asyncio

import pytest

from proxy.store.base import LeaseLost, SessionStore, hash_token
from tests.redis_cluster import redis_cluster
from tests.store_backends import MakeStore, make_store, store
from tests.stores import new_record, new_session

__all__ = ["make_store", "redis_cluster", "store"]  # fixtures, used by name


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
    # Several store objects model several replicas (for Redis: separate pools). The race
    # is about the fence, not the store's timeout: on a loaded machine a new cluster
    # client's first scripts (slots, script loads) once took longer than the default
    # 0.25 s, and a loser that times out gets StoreUnavailable, which says nothing of
    # the fence.
    replicas = [await make_store(timeout_s=2.0) for _ in range(4)]
    for _ in range(30):
        record = new_record()
        await replicas[0].create(record)
        results = await asyncio.gather(
            *(replicas[i % 4].take_over(record.session_id, f"replica-{i}", 0) for i in range(8)),
            return_exceptions=True,
        )
        winners = [r for r in results if not isinstance(r, BaseException)]
        assert winners == [1]
        others = [r for r in results if r not in winners and not isinstance(r, LeaseLost)]
        assert others == []
        loaded = await replicas[0].load(record.session_id)
        assert loaded is not None and loaded.epoch == 1


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
