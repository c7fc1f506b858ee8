"""How far the store holds a session's events (``proxy/persist/saved_mark.py``), as
a held end reads it (``proxy/emulated/held_ends.py``):

- the store lost the session and the persister registered it again: the mark moves
  to what that record holds (otherwise only a later checkpoint moves it, one the
  ticks after an input bring, so this checks the outcome, not its promptness);
- re-registered after an outage, the store is logged as back (``store_recovered``);
- a client re-attached while the store is down, replayed events with no response end
  among them, is not counted as sent an unsaved end.

Real Redis, the proxy in process (its state read for the mark), the strict
reference backends.
"""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from proxy.emulated.runner import live_runner
from tests.redis_server import RedisServer
from tests.resume_client import created, resumed, wait_persisted
from tests.servers import connect, proxy_config, proxy_with_state, reference, ws_url

pytestmark = [pytest.mark.redis]


async def test_a_reregistered_session_moves_its_saved_mark(redis_server: RedisServer) -> None:
    url = redis_server.url
    async with (
        reference("turn") as up,
        proxy_with_state(proxy_config({"m": up}, store={"url": url})) as (base, state),
        connect(ws_url(base)) as c,
    ):
        s = await created(c)
        await wait_persisted(url, s.sid)
        runner = live_runner(state, s.sid)
        assert runner is not None
        client = aioredis.Redis.from_url(url)
        try:
            await client.ping()
            # The store restarts empty, and at once one event (answered by the proxy
            # itself, nothing upstream): its checkpoint finds the session gone and
            # registers it again, and nothing follows it.
            await client.flushall()
            await c.send({"type": "session.heartbeat"})
        finally:
            await client.aclose()
        await c.until("session.heartbeat_ack")
        await wait_persisted(url, s.sid)  # registered again
        # Nothing else happens in the session: only the re-registration moves the mark.
        async with asyncio.timeout(10):
            while True:
                if runner.persister.saved.seq >= runner.journal.seq:
                    break
                await asyncio.sleep(0.02)


async def test_a_reregistration_after_an_outage_says_the_store_is_back(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url
    async with reference("turn") as up:
        config = proxy_config({"m": up}, store={"url": url, "timeout_s": 0.2})
        async with (
            proxy_with_state(config) as (base, state),
            connect(ws_url(base)) as c,
        ):
            s = await created(c)
            await wait_persisted(url, s.sid)
            runner = live_runner(state, s.sid)
            assert runner is not None
            client = aioredis.Redis.from_url(url)
            with capture_logs() as logs:
                try:
                    await client.ping()
                    redis_server.pause()
                    try:
                        await c.send({"type": "session.heartbeat"})
                        async with asyncio.timeout(10):
                            while True:  # until its checkpoint timed out
                                if not runner.persister.saves():
                                    break
                                await asyncio.sleep(0.02)
                        # The store comes back empty: the flush waits behind the freeze.
                        emptied = asyncio.create_task(client.flushall())
                        await asyncio.sleep(0.1)
                    finally:
                        redis_server.resume()
                    await emptied
                finally:
                    await client.aclose()
                await wait_persisted(url, s.sid)  # registered again
                async with asyncio.timeout(10):
                    while True:
                        if runner.persister.saves():
                            break
                        await asyncio.sleep(0.02)
            events = [e["event"] for e in logs]
            assert "session_reregistered" in events
            assert "store_recovered" in events


async def test_a_reattach_with_no_end_to_replay_counts_no_unsaved_end(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url
    async with reference("duplex") as up:
        config = proxy_config({"m": up}, store={"url": url, "timeout_s": 0.3})
        async with proxy_with_state(config) as (base, state):
            async with connect(ws_url(base)) as c1:
                s = await created(c1)
                await wait_persisted(url, s.sid)
                s.take(c1)
                redis_server.pause()
                await c1.send({"type": "session.update", "session": {"instructions": "Be brief."}})
                await c1.until("session.updated")
            try:
                # It missed session.updated: the resume (on the runner's own token, the
                # store being down) replays it, unsaved, and no response end with it.
                async with connect(ws_url(base)) as c2:
                    await resumed(c2, s)
                    replayed = await c2.until("session.updated")
                    assert replayed["server_event_seq"] == s.last + 1
            finally:
                redis_server.resume()
            unsaved = state.metrics.registry.get_sample_value(
                "duplex_proxy_response_ends_unsaved_total",
                {"mode": "barge_in_emulated", "reason": "not_saving"},
            )
            assert not unsaved, "a replay with no response end in it counted as one"
