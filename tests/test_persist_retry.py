"""The persister after a write the store failed (``proxy/persist/persister.py``,
``proxy/persist/lease_pace.py``): the retry comes soon enough that a short grace's
keys do not expire, a drain's last checkpoint is written whatever failed a moment
before, and a client's leaving during a lease touch does not cost the next busy
cycle its coalescing.

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
from tests.quiet_session import PROBE_S, Quiet


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


async def test_a_drains_last_checkpoint_is_written_right_after_a_failed_one() -> None:
    # The store failed a write a moment ago and answers again: the drain's
    # finish(final=False) must still write the session's last state, as nothing
    # retries it afterwards and a resume elsewhere reads it.
    state, session, p, writes = await _persister({"disconnect_grace_s": 30.0})
    assert state.store is not None
    real = state.store.update
    down = [True]

    async def blip(*args: Any, **kwargs: Any) -> Any:
        if down[0]:
            raise StoreUnavailable("blip")
        return await real(*args, **kwargs)

    state.store.update = blip  # type: ignore[method-assign]
    session.n = 1
    await p.flush()  # refused: the store is down
    down[0] = False
    session.n = 2
    before = len(writes)
    await p.finish(final=False)
    assert "update" in writes[before:], "finish wrote nothing: the last state is lost"
    stored = await state.store.load(session.session_id)
    assert stored is not None and stored.state["shim"] == {"n": 2}


async def test_leaving_during_a_lease_touch_costs_no_later_coalescing() -> None:
    # A client leaving (flush_now) while the persister touches the lease: its flush
    # comes next, and the busy cycle after it still waits out checkpoint_interval_s.
    state, session, p, writes = await _persister(
        {"disconnect_grace_s": 30.0, "checkpoint_interval_s": 2.0}
    )
    assert state.store is not None
    real = state.store.append_events
    touching, release = asyncio.Event(), asyncio.Event()

    async def slow_touch(*args: Any, **kwargs: Any) -> Any:
        if not touching.is_set():
            touching.set()
            await release.wait()
        return await real(*args, **kwargs)

    state.store.append_events = slow_touch  # type: ignore[method-assign]
    p._last_write -= 60  # the lease is due: the persister touches it at once
    task = asyncio.create_task(p.run())
    await asyncio.wait_for(touching.wait(), 5)
    session.n = 1
    p.flush_now()  # the client left
    release.set()
    for _ in range(250):  # the flush of that leaving
        if "update" in writes:
            break
        await asyncio.sleep(PROBE_S)
    assert "update" in writes, "the leaving was not flushed"
    session.n = 2
    p.poke()  # busy again: coalesced, written checkpoint_interval_s after the last
    await asyncio.sleep(0.3)
    updates = writes.count("update")
    session.finished.set()
    p.flush_now()
    await asyncio.wait_for(task, 5)
    assert updates == 1, "the checkpoint after the leaving's flush was not coalesced"
