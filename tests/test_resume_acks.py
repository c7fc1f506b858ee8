"""What a resuming client has acknowledged and sent (``docs/protocol.md``, "Resume"): a
resume from before an acked seq is a ``session_resume_gap`` error, and a client event
re-sent after reconnecting (same ``event_id``) is applied once.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.resume_client import (
    acked_turn,
    created,
    error_code,
    resumed,
    send_resume,
    wait_persisted,
)
from tests.servers import connect, replica_pair, ws_url


@pytest.mark.parametrize(
    "where", ["memory", pytest.param("other-replica", marks=pytest.mark.redis)]
)
async def test_resume_from_before_an_acked_seq_is_a_gap_error(
    where: str, request: pytest.FixtureRequest
) -> None:
    url = "memory://"
    if where != "memory":
        url = request.getfixturevalue("redis_server_session").url
    async with (
        replica_pair("turn", url, reply_ms=600) as (a, b),
    ):
        async with connect(ws_url(a)) as c1:
            s, acked = await acked_turn(c1)
        if where != "memory":
            await wait_persisted(url, s.sid, seq=s.last, acked=acked)
        async with connect(ws_url(a if where == "memory" else b)) as c2:
            ev = await send_resume(c2, s, last=acked - 3)
            assert error_code(ev) == "session_resume_gap"
            fresh = await c2.until("session.created")
            assert fresh["session"]["id"] != s.sid, "the same connection starts fresh"
        async with connect(ws_url(a if where == "memory" else b)) as c3:
            await resumed(c3, s)  # from the last seq it has, it resumes fine


@pytest.mark.parametrize("where", ["same", pytest.param("other", marks=pytest.mark.redis)])
async def test_a_client_event_resent_after_reconnect_is_applied_once(
    where: str, request: pytest.FixtureRequest
) -> None:
    url = "memory://"
    if where != "same":
        url = request.getfixturevalue("redis_server_session").url
    update = {"type": "session.update", "event_id": "evt_once_" + secrets.token_hex(4)}
    async with (
        replica_pair("turn", url, reply_ms=500) as (a, b),
    ):
        # Marked by silence_duration_ms (instructions are refused over a turn-based upstream).
        def marked(ms: int) -> dict[str, Any]:
            return {"turn_detection": {"type": "server_vad", "silence_duration_ms": ms}}

        def mark(e: dict[str, Any]) -> Any:
            td = e.get("session", {}).get("audio", {}).get("input", {}).get("turn_detection")
            return td and td["silence_duration_ms"]

        async with connect(ws_url(a)) as c1:
            s = await created(c1)
            await c1.send({**update, "session": marked(501)})
            reply = await c1.until("session.updated")
            s.take(c1)
        if where != "same":
            await wait_persisted(url, s.sid, seq=reply["server_event_seq"])
        async with connect(ws_url(a if where == "same" else b)) as c2:
            # Resume from before the reply, so the client cannot know it was applied.
            await resumed(c2, s, last=reply["server_event_seq"] - 1)
            await c2.send({**update, "session": marked(501)})
            await c2.send({"type": "session.update", "session": marked(502)})
            while mark(c2.events[-1]) != 502:
                await c2.until("session.updated")
        updated = [mark(e) for e in c2.of("session.updated")]
        assert updated == [501, 502], "the replayed reply, then the new update only"
