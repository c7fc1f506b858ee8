"""Who holds a resumed session (``docs/protocol.md``, "Resume"): the connection a resume
supersedes is told ``session.replaced`` and closed, and of two resumes racing for one
session exactly one wins, on the same replica or across two sharing a real Redis.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.resume_client import (
    GONE_OR_LOST,
    answered,
    created,
    error_code,
    redis_url,
    resumed,
    send_resume,
    wait_persisted,
)
from tests.servers import connect, replica_pair, ws_url

__all__ = ["redis_url"]  # fixtures, used by name


@pytest.mark.redis
@pytest.mark.parametrize("where", ["same", "other"])
async def test_the_superseded_connection_gets_session_replaced(redis_url: str, where: str) -> None:
    async with (
        replica_pair("turn", redis_url, reply_ms=1000) as (a, b),
    ):
        async with connect(ws_url(a)) as old:
            s = await created(old)
            await wait_persisted(redis_url, s.sid)
            async with connect(ws_url(a if where == "same" else b)) as new:
                await resumed(new, s)
                replaced = await old.until("session.replaced")
                assert replaced["session_id"] == s.sid
                with pytest.raises(ConnectionError):
                    await old.recv()
                # The new connection has the session: it talks.
                await answered(new)


@pytest.mark.redis
@pytest.mark.parametrize("where", ["same", "other"])
async def test_racing_resumes_exactly_one_wins(redis_url: str, where: str) -> None:
    async with (
        replica_pair("turn", redis_url, reply_ms=500) as (a, b),
    ):
        async with connect(ws_url(a)) as c0:
            s = await created(c0)
            await wait_persisted(redis_url, s.sid)
        for _ in range(5):
            async with (
                connect(ws_url(a, model=None)) as c1,
                connect(ws_url(a if where == "same" else b, model=None)) as c2,
            ):
                firsts = await asyncio.gather(send_resume(c1, s), send_resume(c2, s))
                kinds = sorted(f["type"] for f in firsts)
                assert kinds == ["error", "session.resumed"], firsts
                winner = next(f for f in firsts if f["type"] == "session.resumed")
                loser = next(f for f in firsts if f["type"] == "error")
                assert error_code(loser) in GONE_OR_LOST
                s.token = winner["resume_token"]
                await wait_persisted(redis_url, s.sid)
