"""A response's end reaches the client only once the store has it
(``proxy/emulated/held_ends.py``): the owner killed the moment its client got
``response.done``, before it would have checkpointed again, and the client resumed
on another replica, the response does not end a second time there.

Real Redis, ``python -m proxy serve`` replicas (so one can be killed with SIGKILL)
and the strict duplex reference backend.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from proxy.persist.checkpoint import checkpoint_of
from proxy.reference.options import ReferenceOptions
from tests.held_turn_replicas import slow_replicas
from tests.proxy_process import ProxyProcess
from tests.resume_client import (
    Tracked,
    created,
    load_record,
    redis_url,
    resumed,
    speak,
    wait_persisted,
)
from tests.servers import connect, reference, replica_pair, ws_url
from tests.upstream_tap import upstream_tap

pytestmark = [pytest.mark.redis, pytest.mark.slow]

__all__ = ["redis_url"]  # fixtures, used by name


@asynccontextmanager
async def slow_checkpointing_pair(
    tmp_path: Path, redis_url: str
) -> AsyncIterator[tuple[ProxyProcess, ProxyProcess]]:
    """Replica processes "a" and "b" sharing Redis, in front of the duplex backend.

    The longest checkpoint interval: what the owner sends after a checkpoint stays
    out of the store for up to 2 s, unless the proxy saves it before sending it."""
    async with AsyncExitStack() as stack:
        up = await stack.enter_async_context(
            reference("duplex", reply_ms=5000, options=ReferenceOptions(max_sessions=4))
        )
        yield await slow_replicas(stack, tmp_path, redis_url, up)


async def test_a_response_the_client_saw_end_does_not_end_again_after_the_owner_died(
    tmp_path: Path, redis_url: str
) -> None:
    async with (
        slow_checkpointing_pair(tmp_path, redis_url) as (a, b),
        upstream_tap(ws_url(a.base, model=None)) as (tap, to_a),
    ):
        killed = asyncio.Event()

        def kill_at_the_end(no: int, ev: dict[str, Any]) -> None:
            # The response's end went on to the client: its owner dies there, before
            # its next checkpoint is due.
            if ev.get("type") == "response.done" and not killed.is_set():
                os.kill(a.proc.pid, signal.SIGKILL)
                killed.set()

        tap.on_answered = kill_at_the_end
        async with connect(to_a + "?model=m") as c1:
            s: Tracked = await created(c1)
            await speak(c1)
            opened = await c1.until("response.created", timeout=20)
            # Read on meanwhile: the kill comes the moment the end leaves the owner.
            ending = asyncio.create_task(c1.until("response.done", timeout=20))
            # A checkpoint with the response open (they come every 2 s as it streams).
            await wait_persisted(redis_url, s.sid, seq=opened["server_event_seq"])
            assert not ending.done(), "the response is still open in the store"
            done = await ending
            s.take(c1)
        assert killed.is_set()
        first = done["response"]["id"]
        assert done["response"]["status"] == "completed", done

        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            await speak(c2)
            while True:
                ended = await c2.until("response.done", timeout=20)
                if ended["response"]["id"] != first:
                    break  # the next turn's answer: whatever came before it has come
            s.take(c2)
        dones = [e["response"]["id"] for e in s.events if e["type"] == "response.done"]
        assert dones.count(first) == 1, f"the response ended twice: {dones}"
        assert ended["response"]["status"] == "completed", ended
        s.assert_exactly_once()


async def test_the_store_holds_each_response_end_its_client_has(redis_url: str) -> None:
    """In process: the moment the client has a ``response.done``, the stored checkpoint
    holds it, turn after turn, and the events still come in order, each once."""
    async with replica_pair("duplex", redis_url, reply_ms=1500, checkpoint_interval_s=2.0) as (
        a,
        _,
    ):
        async with connect(ws_url(a)) as c:
            s: Tracked = await created(c)
            for _ in range(2):
                await speak(c)
                done = await c.until("response.done", timeout=20)
                record = await load_record(redis_url, s.sid)
                assert record is not None
                assert checkpoint_of(record).seq >= done["server_event_seq"], "store behind"
            s.take(c)
        s.assert_exactly_once()
