"""A session store opened for one test, and the records every store must keep."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import open_store
from proxy.store.base import SessionRecord, SessionStore, hash_token


def new_record(**overrides: Any) -> SessionRecord:
    fields: dict[str, Any] = {
        "session_id": "sess_" + secrets.token_hex(8),
        "token_hash": hash_token(secrets.token_urlsafe(24)),
        "model": "minicpm-o",
        "mode": "barge_in_emulated",
        "owner": "replica-a",
    }
    fields.update(overrides)
    return SessionRecord(**fields)


@asynccontextmanager
async def opened_store(
    config: StoreConfig, metrics: Metrics | None = None
) -> AsyncIterator[SessionStore]:
    """``open_store(config, metrics)``, closed when the block ends."""
    store = await open_store(config, metrics)
    try:
        yield store
    finally:
        await store.close()


async def assert_round_trip(store: SessionStore) -> None:
    """A new record is created and loads back equal."""
    record = new_record()
    await store.create(record)
    assert await store.load(record.session_id) == record


async def assert_serves_a_fresh_session(store: SessionStore) -> None:
    """A new session is created and its events are kept and read back."""
    fresh = new_record()
    await store.create(fresh)
    await store.append_events(fresh.session_id, 0, [(1, "a")], 0)
    assert await store.events_after(fresh.session_id, 0) == [(1, "a")]


async def new_session(
    store: SessionStore, events: list[tuple[int, str]] | None = None, acked: int = 0
) -> SessionRecord:
    """A new record created in ``store``, with ``events`` appended (epoch 0)."""
    record = new_record()
    await store.create(record)
    if events:
        await store.append_events(record.session_id, 0, events, acked)
    return record
