"""The Redis store through a restart, a Cluster failover and a Sentinel failover.

Real processes throughout: proxy replicas as ``python -m proxy serve``
(``tests/test_resume_replicas.py``), redis-server nodes from ``tests/redis_server.py``
and ``tests/redis_cluster.py``. After each event the proxy's pooled connections point
at a server that restarted or is no longer the master; the first call on them must
still succeed, and a client must resume with nothing lost.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import math
import signal
from pathlib import Path

import pytest

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import open_store
from proxy.store.redis_scripts import session_keys
from tests.redis_cluster import Cluster, SentinelSet, cli, redis_cluster, redis_sentinel
from tests.redis_server import RedisServer, redis_server
from tests.replica_processes import lose_owner, replica_processes
from tests.resume_client import (
    answered,
    created,
    cut_answer_ends,
    mid_answer,
    resumed,
    speak,
    until_deltas,
    wait_persisted,
)
from tests.servers import Client, connect, ws_url
from tests.stores import new_session, opened_store

__all__ = ["redis_cluster", "redis_sentinel", "redis_server"]  # fixtures, used by name

pytestmark = [pytest.mark.redis, pytest.mark.slow]

OUTPUT_RATE = 24000  # a GA session's default output rate


async def played_out(c: Client, response_id: str) -> None:
    """The client has played a response's audio to the end: it says so (``playback.ack``,
    docs/protocol.md), as a client that speaks only after the answer would.

    Without the ack the proxy estimates playback from when it sent each delta
    (``shim/playback.py``): deltas that went out bunched (the proxy or the stand-in held
    up a moment, as a loaded machine does) leave the answer playing past its
    ``response.done``. A turn sent at once then, faster than real time, is speech over
    the answer, and since the stand-in's answer is the user's own turn looped
    (``proxy/reference/voice.py``) the proxy takes it for the answer's echo: no turn,
    no second answer.
    """
    samples = sum(
        len(base64.b64decode(e["delta"])) // 2
        for e in c.of("response.output_audio.delta")
        if e["response_id"] == response_id
    )
    # Rounded up: an ack short of what was sent by a fraction of a ms is still playing.
    played_ms = math.ceil(samples * 1000 / OUTPUT_RATE)
    await c.send({"type": "playback.ack", "response_id": response_id, "played_ms": played_ms})


async def test_the_first_resume_after_a_redis_restart_succeeds(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with replica_processes(tmp_path, url, 600) as (a, b):
        async with connect(ws_url(a.base)) as c1:
            s = await created(c1)
            await speak(c1)
            await c1.until("response.done", timeout=20)
            s.take(c1)
            await wait_persisted(url, s.sid, seq=s.last)
            # A restart that keeps the data (a snapshot, then the same port): every
            # connection b pooled before is stale now.
            await asyncio.to_thread(cli, redis_server.port, "SAVE")
            redis_server.stop()
            redis_server.start()
            async with connect(ws_url(b.base)) as c2:
                await resumed(c2, s)  # b's very first store calls since the restart
                await c1.until("session.replaced")
                await answered(c2)
                s.take(c2)
        s.assert_exactly_once()


async def test_a_session_outlives_a_failover_of_its_cluster_master(
    tmp_path: Path, redis_cluster: Cluster
) -> None:
    # A manual failover pauses the master's clients for a moment: give each call more
    # room than the default so the test is about the failover, not this machine's load.
    url = redis_cluster.url
    async with replica_processes(tmp_path, url, 3000, timeout_s=1) as (a, b):
        async with connect(ws_url(a.base)) as c1:
            s = await mid_answer(c1)
            # The master serving this session's slot hands over to its replica while
            # the answer streams and the owner keeps persisting it.
            rec_key, _ = session_keys(s.sid)
            old, new = await asyncio.to_thread(redis_cluster.failover, rec_key)
            assert old != new and redis_cluster.master_port_of(rec_key) == new
            done = await c1.until("response.done", timeout=20)
            await played_out(c1, done["response"]["id"])
            await speak(c1)  # a second answer, written only to the promoted master
            await until_deltas(c1, len(c1.of("response.output_audio.delta")) + 3)
            response = await lose_owner(c1, s, a, signal.SIGKILL, url)
        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            await cut_answer_ends(c2, response["response"]["id"])
            await answered(c2)
            s.take(c2)
        s.assert_exactly_once()


async def test_the_store_follows_a_sentinel_failover(redis_sentinel: SentinelSet) -> None:
    async with opened_store(StoreConfig(url=redis_sentinel.url, timeout_s=1), Metrics()) as store:
        sid = (await new_session(store, [(1, "a"), (2, "b")])).session_id
        old = redis_sentinel.master.port
        await asyncio.to_thread(redis_sentinel.failover)
        assert redis_sentinel.master_port() != old
        # The pooled connection still points at the old master, now a replica: the
        # first write is refused there and goes, once more, to the new master.
        assert await store.take_over(sid, "replica-b", 0) == 1
        await store.append_events(sid, 1, [(3, "c")], 0)
        assert await store.events_after(sid, 0) == [(1, "a"), (2, "b"), (3, "c")]
        loaded = await store.load(sid)
        assert loaded is not None and (loaded.epoch, loaded.owner) == (1, "replica-b")
        new_master = redis_sentinel.master.port
        rec_key, _ = session_keys(sid)
        assert (await asyncio.to_thread(cli, new_master, "HGET", rec_key, "epoch")).strip() == "1"


async def test_the_store_follows_a_cluster_master_crash(redis_cluster: Cluster) -> None:
    """Kill the master (no handover): once its replica is elected, the first calls on
    the store's pooled connections reach the new master and find everything."""
    store = await open_store(StoreConfig(url=redis_cluster.url, timeout_s=1), Metrics())
    dead = None
    try:
        record = await new_session(store, [(1, "a"), (2, "b")])
        sid = record.session_id
        rec_key, _ = session_keys(sid)
        dead, new = await asyncio.to_thread(redis_cluster.crash_master, rec_key)
        assert dead.port != new
        assert await store.load(sid) == dataclasses.replace(record, last_seq=2)
        assert await store.take_over(sid, "replica-b", 0) == 1
        await store.append_events(sid, 1, [(3, "c")], 0)
        assert await store.events_after(sid, 0) == [(1, "a"), (2, "b"), (3, "c")]
    finally:
        await store.close()
        if dead is not None:
            await asyncio.to_thread(redis_cluster.rejoin, dead)
