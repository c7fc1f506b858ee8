"""The persister after a write the store failed (``proxy/persist/persister.py``,
``proxy/persist/lease_pace.py``): the retry comes soon enough that a short grace's
keys do not expire.

The persister alone with a stand-in session on a memory store whose writes are made
to fail or to wait, as a Redis that timed out or stalled would."""

from __future__ import annotations

import asyncio
from typing import Any

from structlog.testing import capture_logs

from proxy.config import config_from_dict
from proxy.persist.persister import Persister
from proxy.state import ProxyState
from proxy.store import open_store
from proxy.store.base import StoreUnavailable
from tests.test_persist_lease import PROBE_S, Quiet


class Busy(Quiet):
    """A session whose snapshot changes when its counter does."""

    n = 0

    def snapshot(self) -> dict[str, Any]:
        return {"n": self.n}


async def _persister(store: dict[str, Any]) -> tuple[ProxyState, Busy, Persister, list[str]]:
    cfg = config_from_dict(
        {
            "routes": [{"model": "m", "upstream": "ws://127.0.0.1:9/v1/realtime"}],
            "auth": {"mode": "none"},
            "store": store,
        }
    )
    state = ProxyState(config=cfg)
    state.store = await open_store(cfg.store, state.metrics)
    writes: list[str] = []
    for name in ("save", "update", "append_events"):
        real = getattr(state.store, name)

        def counted(real: Any = real, name: str = name) -> Any:
            async def write(*args: Any, **kwargs: Any) -> Any:
                writes.append(name)
                return await real(*args, **kwargs)

            return write

        setattr(state.store, name, counted())
    session = Busy()
    p = Persister(session, state)  # type: ignore[arg-type]
    assert await p.create("tok")
    return state, session, p, writes


async def test_one_timed_out_lease_touch_does_not_let_the_keys_expire() -> None:
    # grace 0.75 s: the lease is written every 0.25 s. One touch times out (0.1 s);
    # a retry STORE_RETRY_S (0.5 s) later came at 0.85 s, after the keys expired.
    state, session, p, _ = await _persister({"disconnect_grace_s": 0.75, "timeout_s": 0.1})
    assert state.store is not None
    real = state.store.append_events
    failed: list[int] = []

    async def times_out_once(*args: Any, **kwargs: Any) -> Any:
        if not failed:
            failed.append(1)
            await asyncio.sleep(state.config.store.timeout_s)
            raise StoreUnavailable("timed out")
        return await real(*args, **kwargs)

    state.store.append_events = times_out_once  # type: ignore[method-assign]
    missing = 0
    with capture_logs() as logs:
        task = asyncio.create_task(p.run())
        for _ in range(int(2.0 / PROBE_S)):
            if await state.store.load(session.session_id) is None:
                missing += 1
            await asyncio.sleep(PROBE_S)
        session.finished.set()
        p.flush_now()
        await asyncio.wait_for(task, 5)
    rereg = sum(e["event"] == "session_reregistered" for e in logs)
    assert failed, "no touch was made to time out"
    assert not missing and not rereg, f"keys gone at {missing} probes, {rereg} re-registrations"
