"""A session whose last store writes fail still leaves: its slot and its count go.

The end of an emulated session writes its record a last time and deletes it
(``proxy/persist/persister.py``, ``finish``). A store that fails there in a way the
persister does not expect (not ``StoreUnavailable``: a record it cannot write) is
logged; the session leaves the replica all the same (``proxy/emulated/runner.py``,
``stop``), else it held its route's slot until a restart.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.servers import connect, drop, proxy_config, proxy_with_state, reference, ws_url

pytestmark = pytest.mark.timeout(60)


async def test_a_store_that_fails_at_the_end_does_not_keep_the_slot() -> None:
    async with reference("turn") as up:
        store = {"disconnect_grace_s": 0.5}
        config = proxy_config({"m": up}, server={"max_sessions": 1}, store=store)
        async with proxy_with_state(config) as (base, state):
            async with connect(ws_url(base)) as c:
                first = await c.until("session.created")
                assert state.store is not None

                async def fails(*_: Any, **__: Any) -> Any:
                    raise TypeError("a record the store cannot write")

                state.store.save = fails  # type: ignore[method-assign]
                state.store.delete = fails  # type: ignore[method-assign]
                drop(c)  # gone without a word: its grace, then its end
            for _ in range(100):
                if first["session"]["id"] not in state.live:
                    break
                await asyncio.sleep(0.05)
            assert first["session"]["id"] not in state.live
            async with connect(ws_url(base)) as c2:  # the one slot is free again
                await c2.until("session.created")
