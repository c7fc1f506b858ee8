"""Session store contract (``proxy/store/base.py``), the replay log: events after a seq in
order and idempotent, acks trimming it with a floor left, and its byte bound; against
memory and a real Redis."""

from __future__ import annotations

from proxy.store.base import SessionStore
from shim.journal import ENTRY_BYTES
from tests.redis_cluster import redis_cluster
from tests.store_backends import MakeStore, make_store, store
from tests.stores import new_session

__all__ = ["make_store", "redis_cluster", "store"]  # fixtures, used by name


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
