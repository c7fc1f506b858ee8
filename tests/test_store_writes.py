"""What a session writes to Redis while it talks: what changed, not its whole state
again (``proxy/persist/persister.py``). Counted in bytes Redis received (``INFO
stats`` ``total_net_input_bytes``), never in time."""

from __future__ import annotations

import orjson
import pytest
import redis.asyncio as aioredis

from proxy.config import Config
from tests.redis_server import RedisServer
from tests.resume_client import created, speak, wait_persisted
from tests.servers import connect, proxy_config, reference, replica, ws_url

pytestmark = [pytest.mark.redis]

INSTRUCTIONS = "Answer briefly. " * (2 * 1024 * 1024 // 16)  # 2 MiB


async def received_bytes(url: str) -> int:
    client = aioredis.Redis.from_url(url)
    try:
        stats = await client.info("stats")
        return int(stats["total_net_input_bytes"])
    finally:
        await client.aclose()


def config(upstream: str, url: str) -> Config:
    server = {"max_instructions_chars": 2 * len(INSTRUCTIONS)}
    return proxy_config({"m": upstream}, store={"url": url, "timeout_s": 5.0}, server=server)


# Only over a duplex upstream: a turn-based one refuses instructions (unsupported_by_upstream).
@pytest.mark.parametrize("kind", ["duplex-no-barge-in"])
async def test_big_instructions_are_written_once_not_at_every_event(
    redis_server: RedisServer, kind: str
) -> None:
    url = redis_server.url  # its own Redis: nobody else writes to it
    async with (
        reference(kind, reply_ms=1500) as up,
        # A write the store times out on is sent again: not what this test counts.
        # Instructions over their default cap (``server.max_instructions_chars``): allowed here.
        replica(config(up, url), "a") as a,
        connect(ws_url(a)) as c,
    ):
        s = await created(c)
        await c.send({"type": "session.update", "session": {"instructions": INSTRUCTIONS}})
        updated = await c.until("session.updated")
        record = await wait_persisted(url, s.sid, seq=updated["server_event_seq"])
        assert INSTRUCTIONS in orjson.dumps(record.static).decode(), "the settings hold them"
        before = await received_bytes(url)
        await speak(c)
        done = await c.until("response.done", timeout=30)
        assert done["response"]["status"] == "completed"
        deltas = c.of("response.output_audio.delta")
        assert len(deltas) >= 10, "the seq moved many times meanwhile"
        await wait_persisted(url, s.sid, seq=done["server_event_seq"])
        written = await received_bytes(url) - before
        # The audio and the events themselves, not the instructions once more.
        assert written < len(INSTRUCTIONS) / 2, written
        record = await wait_persisted(url, s.sid)
        assert INSTRUCTIONS in orjson.dumps(record.static).decode()
