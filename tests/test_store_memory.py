"""The memory store's own matters: ``open_store`` gives it for ``memory://``, and an update
copies only the fields it writes."""

from __future__ import annotations

import pytest

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import memory as memory_module
from proxy.store import open_store
from proxy.store.memory import MemoryStore
from tests.store_backends import store_up
from tests.stores import new_record


async def test_open_store_memory() -> None:
    metrics = Metrics()
    store = await open_store(StoreConfig(), metrics)
    assert isinstance(store, MemoryStore)
    assert await store.healthy()
    assert store_up(metrics) == 1
    await store.close()
    with pytest.raises(ValueError):
        await open_store(StoreConfig(url="mongodb://x"))


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
