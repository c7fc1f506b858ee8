"""Passthrough resume across replicas sharing one real Redis (docs/architecture.md,
"Session state, resume and fencing"): racing resumes have exactly one winner, the
connection a resume replaced never writes its stale binding back, and the client
event ids it applied reach the store as they are applied."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from contextlib import AsyncExitStack

import pytest
import redis.asyncio as aioredis

from proxy.reference.options import ReferenceOptions
from proxy.store.redis_scripts import FENCE, REBIND
from tests.resume_client import (
    GONE_OR_LOST,
    created,
    error_code,
    load_record,
    redis_url,
    resumed,
    send_resume,
)
from tests.servers import connect, replica_pair, ws_url

pytestmark = [pytest.mark.redis]

__all__ = ["redis_url"]  # fixtures, used by name

# A resume writes the rotated token's hash with this script (proxy/store/redis.py).
REBIND_SHA = hashlib.sha1((FENCE + REBIND).encode()).hexdigest()


async def _count_token_writes(url: str, writes: list[str]) -> None:
    """Every command Redis runs that writes a record's ``token_hash`` field (a create,
    or a rebind)."""
    client = aioredis.Redis.from_url(url)
    try:
        async with client.monitor() as m:
            async for cmd in m.listen():
                text = str(cmd.get("command", ""))
                if text.startswith("EVALSHA") and ("token_hash" in text or REBIND_SHA in text):
                    writes.append(text)
    finally:
        await client.aclose()


async def test_racing_passthrough_resumes_exactly_one_wins_and_the_session_survives(
    redis_url: str,
) -> None:
    async with (
        replica_pair("duplex", redis_url, reply_ms=500) as (a, b),
    ):
        watcher = asyncio.create_task(_count_token_writes(redis_url, writes := []))
        await asyncio.sleep(0.2)  # MONITOR is on
        stack = AsyncExitStack()
        old = await stack.enter_async_context(connect(ws_url(a, duplex="1")))
        s = await created(old)
        assert (await load_record(redis_url, s.sid)) is not None
        async with stack:
            for n in range(8):
                # The last winner's connection is still open: both racers replace it,
                # and it ends (its relay stops) while they take the session over.
                async with (
                    connect(ws_url(a, model=None)) as c1,
                    connect(ws_url(b, model=None)) as c2,
                ):
                    firsts = await asyncio.gather(send_resume(c1, s), send_resume(c2, s))
                    kinds = sorted(f["type"] for f in firsts)
                    assert kinds == ["error", "session.resumed"], (n, firsts)
                    winner = next(f for f in firsts if f["type"] == "session.resumed")
                    assert error_code(next(f for f in firsts if f["type"] == "error")) in (
                        GONE_OR_LOST
                    )
                    s.token = winner["resume_token"]
                    # The replaced connection's relay has ended; whatever it wrote,
                    # the winner's token still resumes the session.
                    await asyncio.sleep(0.2)
                    async with connect(ws_url(a if n % 2 else b, model=None)) as c3:
                        await resumed(c3, s)
        await asyncio.sleep(0.3)
        watcher.cancel()
        # The binding's token hash is written when the session is bound and by each
        # resume that won; never by a connection that was replaced.
        # (A script's first run shows twice: EVALSHA, NOSCRIPT, SCRIPT LOAD, EVALSHA.)
        assert len(set(writes)) == 1 + 2 * 8, "\n".join(w[100:200] for w in writes)


async def test_an_event_applied_just_before_a_drop_is_not_applied_again_elsewhere(
    redis_url: str,
) -> None:
    async with (
        # Three sessions, each left to its disconnect grace: a server configured for them.
        replica_pair(
            "duplex", redis_url, reply_ms=500, options=ReferenceOptions(max_sessions=3)
        ) as (a, b),
    ):
        for n in range(3):
            update = {"type": "session.update", "event_id": "evt_x_" + secrets.token_hex(4)}
            async with connect(ws_url(a, duplex="1")) as c1:
                s = await created(c1)
                await c1.send({**update, "session": {"instructions": "first"}})
                reply = await c1.until("session.updated")
                s.take(c1)
                # Resume elsewhere at once, the first connection still open.
                async with connect(ws_url(b)) as c2:
                    await resumed(c2, s, last=reply["server_event_seq"] - 1)
                    await c2.send({**update, "session": {"instructions": "first"}})
                    await c2.send({"type": "session.update", "session": {"instructions": "2"}})
                    while c2.events[-1].get("session", {}).get("instructions") != "2":
                        await c2.until("session.updated")
                    got = [e["session"]["instructions"] for e in c2.of("session.updated")]
                    assert got.count("first") == 1 and got[-1] == "2", (n, got)
