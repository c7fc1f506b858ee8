"""Resume on the replica that holds the session (``docs/protocol.md``, "Resume"): the
replay after the cut comes exactly once, by ``session.resume`` or the upgrade query,
and a used resume token is spent.

Every assertion is a protocol fact: which events arrive, their ``server_event_seq``,
``event_id`` and content; never how long anything took.
"""

from __future__ import annotations

from tests.resume_client import (
    Tracked,
    created,
    error_code,
    mid_answer,
    resumable,
    resumed,
    send_resume,
    speak,
    store_url,
    until_deltas,
)
from tests.servers import connect, reference, replica, store_config, ws_url

__all__ = ["store_url"]  # fixtures, used by name


async def test_resume_on_the_same_replica_replays_exactly_once(store_url: str) -> None:
    async with (
        reference("turn", reply_ms=3000) as up,
        replica(store_config(up, store_url), "a") as base,
    ):
        async with connect(ws_url(base)) as c1:
            s = await created(c1)
            assert resumable(c1)
            old_token = s.token
            await speak(c1)
            await until_deltas(c1, 3)
            s.take(c1)
        cut = s.last
        async with connect(ws_url(base)) as c2:
            await resumed(c2, s)
            done = await c2.until("response.done", timeout=20)
            new = s.take(c2)
        assert new[0]["server_event_seq"] == cut + 1, "the replay starts right after the cut"
        assert done["response"]["status"] == "completed", "the upstream never dropped"
        assert any(e["type"] == "response.output_audio.delta" for e in new)
        s.assert_exactly_once()
        async with connect(ws_url(base)) as c3:
            ev = await send_resume(c3, Tracked(s.sid, old_token))
            assert error_code(ev) == "session_resume_denied", "a used token is spent"


async def test_resume_through_the_upgrade_query() -> None:
    async with (
        reference("turn", reply_ms=2000) as up,
        replica(store_config(up, "memory://"), "a") as base,
    ):
        async with connect(ws_url(base)) as c1:
            s = await mid_answer(c1, 2)
            s.take(c1)
        query = {
            "session_id": s.sid,
            "resume_token": s.token,
            "last_received_server_event_seq": str(s.last),
        }
        async with connect(ws_url(base, model=None, **query)) as c2:
            first = await c2.recv()
            assert first["type"] == "session.resumed"
            await c2.until("response.done", timeout=20)
            s.take(c2)
        s.assert_exactly_once()
