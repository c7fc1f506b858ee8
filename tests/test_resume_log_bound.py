"""The session's replay log and the store count the same bytes against
``[store] replay_max_bytes`` (``shim/journal.py``): a client that missed close to that
many bytes of events resumes on another replica with every event the store holds,
not a ``session_resume_gap`` because the carried-on log counted more and trimmed.

Real Redis; the answer streams with no client attached, more than the bound, so the
store itself trims the oldest; the client resumes from the oldest seq it still has.
"""

from __future__ import annotations

import asyncio

import orjson
import pytest

from proxy.config import StoreConfig
from tests.redis_server import RedisServer
from tests.resume_client import mid_answer, resumed
from tests.servers import connect, replica_pair, ws_url
from tests.stores import opened_store

pytestmark = [pytest.mark.redis, pytest.mark.slow]

BOUND = 64 * 1024  # well under one 2.5 s answer's audio


async def _stored(url: str, sid: str) -> tuple[int, list[tuple[int, str]]]:
    """Once the answer's end is logged: the oldest seq the store replays after, and
    what it replays."""
    async with opened_store(StoreConfig(url=url)) as store, asyncio.timeout(30):
        while True:
            after = 0
            while (events := await store.events_after(sid, after)) is None:
                after += 1
            if events and orjson.loads(events[-1][1])["type"] == "response.done":
                return after, events
            await asyncio.sleep(0.1)


async def test_a_resume_elsewhere_after_missing_the_whole_log_replays_all_of_it(
    redis_server_session: RedisServer,
) -> None:
    redis_url = redis_server_session.url
    async with replica_pair("turn", redis_url, reply_ms=2500, replay_max_bytes=BOUND) as (a, b):
        async with connect(ws_url(a)) as c1:
            s = await mid_answer(c1, 2)
        last, stored = await _stored(redis_url, s.sid)
        assert last > 0, "the store trimmed: what it holds is close to the bound"
        async with connect(ws_url(b)) as c:
            await resumed(c, s, last=last)
            head = stored[-1][0]
            while not c.events or c.events[-1].get("server_event_seq") != head:
                ev = await c.recv()
                assert ev["type"] != "error", ev
        replay = [e for e in c.events if "server_event_seq" in e]
        assert [e["server_event_seq"] for e in replay] == [seq for seq, _ in stored]
