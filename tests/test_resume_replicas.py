"""Resume across proxy *processes* sharing one real Redis (``docs/protocol.md``, "Resume").

Each replica is ``python -m proxy serve --config F --port P``, so one can be killed
with SIGKILL mid-response: nothing it had in memory survives, only what it wrote to
Redis. The reference backend runs in this process.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.replica_processes import lose_owner, replica_processes
from tests.resume_client import answered, cut_answer_ends, mid_answer, redis_url, resumed
from tests.servers import connect, ws_url

pytestmark = [pytest.mark.redis, pytest.mark.slow]

__all__ = ["redis_url"]  # fixtures, used by name


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
