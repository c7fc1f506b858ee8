"""Resume across proxy *processes* sharing one real Redis (``docs/protocol.md``, "Resume").

Each replica is ``python -m proxy serve --config F --port P``, so one can be killed
with SIGKILL mid-response: nothing it had in memory survives, only what it wrote to
Redis. The reference backend runs in this process.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.proxy_process import ProxyProcess, proxy_process
from tests.resume_client import (
    Tracked,
    answered,
    cut_answer_ends,
    mid_answer,
    redis_url,
    resumed,
    wait_persisted,
)
from tests.servers import Client, connect, reference, ws_url

pytestmark = [pytest.mark.redis, pytest.mark.slow]

__all__ = ["redis_url"]  # fixtures, used by name


@asynccontextmanager
async def replica_process(
    tmp_path: Path, name: str, upstream: str, redis_url: str, **store: float
) -> AsyncIterator[ProxyProcess]:
    """``python -m proxy serve`` with the store at ``redis_url`` (and ``store`` settings),
    once its /readyz says "ready"."""
    settings = "".join(f"{key} = {value}\n" for key, value in store.items())
    config = (
        f'[server]\nlog_level = "info"\n[auth]\nmode = "none"\n'
        f'[store]\nurl = "{redis_url}"\n{settings}'
        # Hand over at once on SIGTERM: these tests are about the handover, and a
        # reply must still be running when it happens (tests/test_drain.py: the delay).
        "[drain]\nreadiness_delay_s = 0\n"
        f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
    )
    async with proxy_process(tmp_path, name, config) as replica:
        await replica.until_ready()
        yield replica


@asynccontextmanager
async def replica_processes(
    tmp_path: Path, redis_url: str, reply_ms: int, **store: float
) -> AsyncIterator[tuple[ProxyProcess, ProxyProcess]]:
    """A turn-based reference backend (in this process) behind replica processes "a" and
    "b" sharing the Redis at ``redis_url``."""
    async with (
        reference("turn", reply_ms=reply_ms) as up,
        replica_process(tmp_path, "a", up, redis_url, **store) as a,
        replica_process(tmp_path, "b", up, redis_url, **store) as b,
    ):
        yield a, b


async def lose_owner(
    c: Client, s: Tracked, owner: ProxyProcess, sig: signal.Signals, redis_url: str
) -> dict[str, Any]:
    """Once Redis holds the answer ``c`` is hearing, ``sig`` to its owner; ``c`` is read to
    its end. The answer's ``response.created``."""
    response = c.of("response.created")[-1]
    await wait_persisted(redis_url, s.sid, seq=response["server_event_seq"])
    owner.proc.send_signal(sig)
    with pytest.raises(ConnectionError):
        while True:  # whatever was already on the wire still arrives
            await c.recv()
    s.take(c)
    return response


async def test_resume_on_a_second_process_replaces_the_first(
    tmp_path: Path, redis_url: str
) -> None:
    async with replica_processes(tmp_path, redis_url, 3000) as (a, b):
        async with connect(ws_url(a.base)) as c1:
            s = await mid_answer(c1)
            s.take(c1)
            rid = c1.of("response.created")[-1]["response"]["id"]
            # The old connection stays open while the client resumes elsewhere.
            async with connect(ws_url(b.base)) as c2:
                await resumed(c2, s)
                replaced = await c1.until("session.replaced")
                assert replaced["session_id"] == s.sid
                with pytest.raises(ConnectionError):
                    while True:
                        await c1.recv()
                await cut_answer_ends(c2, rid)
                await answered(c2)
                s.take(c2)
        s.assert_exactly_once()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_resume_after_the_owner_died_or_drained(
    tmp_path: Path, redis_url: str, sig: signal.Signals
) -> None:
    """SIGKILL: only what the owner had written survives. SIGTERM: it drains (close 1012)."""
    async with replica_processes(tmp_path, redis_url, 3000) as (a, b):
        async with connect(ws_url(a.base)) as c1:
            s = await mid_answer(c1)
            response = await lose_owner(c1, s, a, sig, redis_url)
        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            done = await cut_answer_ends(c2, response["response"]["id"])
            details = done["response"]["status_details"]  # its cause, in GA's shape
            assert details.get("reason") or details["error"]["code"] == "upstream_lost"
            await answered(c2)
            s.take(c2)
        s.assert_exactly_once()
        if sig == signal.SIGKILL:
            assert a.proc.returncode == -signal.SIGKILL
        else:
            assert c1.ws.close_code == 1012, "drained: resume elsewhere"
