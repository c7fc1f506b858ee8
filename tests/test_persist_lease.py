"""A live session's keys in the store never expire while it stays quiet
(``proxy/persist/persister.py``, ``proxy/persist/lease_pace.py``).

The lease is written at least three times in ``disconnect_grace_s``; the wait that
coalesces a busy session's checkpoints (``checkpoint_interval_s``) must not stretch
that pace. When it did, a quiet session wrote every grace/3 + checkpoint_interval_s:
with the grace short enough, its keys expired between two writes, the next write
found them gone and the persister registered the whole session again
(``session_reregistered``) every cycle, while a resume on another replica found no
session.

The persister alone with a session that never pokes it (a memory store), and a
connected client that says nothing through the proxy with the turn-based reference.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from structlog.testing import capture_logs

from proxy.config import config_from_dict
from proxy.persist.lease_pace import STORE_RETRY_S, lease_due
from proxy.persist.persister import Persister
from proxy.state import ProxyState
from proxy.store import open_store
from tests.quiet_session import PROBE_S, Quiet
from tests.resume_client import created
from tests.servers import connect, proxy_config, proxy_with_state, reference, ws_url


@pytest.mark.parametrize(
    ("grace_s", "interval_s", "watch_s"),
    [(0.3, 0.25, 3.0), (2.5, 2.0, 8.0)],
    ids=["grace0.3-default-interval", "grace2.5-interval2.0"],
)
async def test_a_quiet_session_keeps_its_keys(
    grace_s: float, interval_s: float, watch_s: float
) -> None:
    cfg = config_from_dict(
        {
            "routes": [{"model": "m", "upstream": "ws://127.0.0.1:9/v1/realtime"}],
            "auth": {"mode": "none"},
            "store": {"disconnect_grace_s": grace_s, "checkpoint_interval_s": interval_s},
        }
    )
    state = ProxyState(config=cfg)
    state.store = await open_store(cfg.store, state.metrics)
    session = Quiet()
    p = Persister(session, state)  # type: ignore[arg-type]
    assert await p.create("tok")
    missing = 0
    with capture_logs() as logs:
        task = asyncio.create_task(p.run())
        try:
            for _ in range(int(watch_s / PROBE_S)):
                if await state.store.load(session.session_id) is None:
                    missing += 1
                await asyncio.sleep(PROBE_S)
        finally:
            session.finished.set()
            p.flush_now()
            await asyncio.wait_for(task, 5)
    rereg = sum(e["event"] == "session_reregistered" for e in logs)
    assert rereg == 0 and missing == 0, (
        f"a live session's keys expired: {rereg} re-registrations, "
        f"absent at {missing} probes in {watch_s} s"
    )


async def test_a_quiet_connected_session_keeps_its_keys_in_the_store() -> None:
    # (a grace of 0.3 s with the default interval passes here even before: this
    # session's ticker pokes the persister every tick)
    store = {"disconnect_grace_s": 2.5, "checkpoint_interval_s": 2.0}
    watch_s = 9.0
    async with (
        reference("turn") as up,
        proxy_with_state(proxy_config({"m": up}, store=store)) as (base, state),
        connect(ws_url(base)) as c,
    ):
        s = await created(c)
        assert state.store is not None
        missing = 0
        with capture_logs() as logs:
            for _ in range(int(watch_s / PROBE_S)):  # the client stays, says nothing
                if await state.store.load(s.sid) is None:
                    missing += 1
                await asyncio.sleep(PROBE_S)
        rereg = [e for e in logs if e["event"] == "session_reregistered"]
        assert not rereg and not missing, (
            f"keys of a live session expired: {len(rereg)} re-registrations, "
            f"absent from the store at {missing} probes in {watch_s} s"
        )


def test_the_lease_is_due_an_interval_after_a_write_and_a_failure_waits_to_retry() -> None:
    now = time.monotonic()
    assert lease_due(now, 0.0, 0.1) <= 0.1
    assert lease_due(now - 1.0, 0.0, 0.1) < 0, "overdue: written at once"
    # a write that failed since the last one is not tried again at once (no busy loop
    # while the store is down), but within a lease interval if that is shorter
    assert 0 < lease_due(now - 1.0, now, 4.0) <= STORE_RETRY_S
    assert 0 < lease_due(now - 1.0, now, 0.1) <= 0.1
