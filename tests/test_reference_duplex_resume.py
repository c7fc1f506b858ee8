"""Resume on the duplex reference backends (``docs/fidelity.md`` row 13): the journal
replays exactly once after a drop, a takeover replaces the old socket, acks and a full
journal make a resume behind them a resync, and a detached session expires.

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import asyncio

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_duplex_client import (
    TURN,
    backend,
    opened,
    pcm,
    peer,
    resume_request,
    session_of,
)

pytestmark = pytest.mark.timeout(60)


async def test_resume_replays_exactly_once_after_a_drop() -> None:
    async with backend("duplex", reply_ms=1500) as (http, base):
        url = f"{base}/v1/realtime?duplex=1&model=m&autostart=0"
        async with peer(http, url) as old:
            await old.send({"type": "session.update", "session": {"model": "m"}})
            created = await opened(old)
            await old.speak(TURN)
            await old.until("response.output_audio.delta")
            last_seen = int(str(old.events[-1]["server_event_seq"]))
        await asyncio.sleep(0.5)  # detached: the model keeps talking into the journal
        async with peer(http, url) as new:
            await new.send(resume_request(created, last_seen))
            resumed = await new.recv()
            assert resumed["type"] == "session.resumed" and "server_event_seq" not in resumed
            assert list(resumed) == [
                "type",
                "event_id",
                "session_id",
                "session",
                "attachment_generation",
                "resume_token",
            ]
            assert (
                resumed["attachment_generation"] == 2
                and resumed["resume_token"] != created["resume_token"]
            )
            assert "object" not in session_of(resumed)  # raw public dict, no GA defaults
            await new.until("response.done")
            seqs = [int(str(e["server_event_seq"])) for e in new.events[1:]]
            assert seqs == list(range(last_seen + 1, last_seen + 1 + len(seqs)))
            everything = old.events[1:] + new.events[1:]
            audio = [e for e in everything if e["type"] == "response.output_audio.delta"]
            assert sum(pcm(d).size for d in audio) == pytest.approx(1.5 * 24000, abs=4800)
        async with peer(http, url) as stale:
            await stale.send(resume_request(created))
            refused = await stale.recv()
            assert refused["error"] == {
                "type": "invalid_request_error",
                "code": "invalid_resume_token",
                "message": "Invalid duplex session resume token",
            }
            assert await stale.closed() == 1000


async def test_takeover_replaces_the_old_socket() -> None:
    async with backend("duplex") as (http, base), peer(http, f"{base}/v1/duplex?model=m") as old:
        created = await opened(old)
        async with peer(http, f"{base}/v1/duplex?resume=1&model=m") as new:
            await new.send(resume_request(created, 1))
            assert (await new.recv())["type"] == "session.resumed"
            replaced = await old.recv()
            assert list(replaced) == ["type", "event_id", "session_id", "attachment_generation"]
            assert replaced["type"] == "session.replaced" and replaced["attachment_generation"] == 1
            assert await old.closed() == 1000
            assert old.close_reason == "session_replaced"
            await new.send({"type": "session.heartbeat"})
            assert (await new.recv())["server_event_seq"] == 2


async def test_event_ack_trims_so_resume_behind_it_needs_resync() -> None:
    async with backend("duplex") as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            created = await opened(p)
            await p.send({"type": "session.heartbeat"})
            await p.send({"type": "session.heartbeat"})
            await p.until("session.heartbeat_ack", where=lambda e: e["server_event_seq"] == 3)
            await p.send({"type": "session.event_ack", "server_event_seq": 2})
            await p.send({"type": "session.heartbeat"})
            await p.until("session.heartbeat_ack")
        sid = session_of(created)["id"]
        async with peer(http, f"{base}/v1/duplex") as late:
            await late.send(resume_request(created, 1))
            resync = await late.recv()
            assert list(resync) == ["type", "event_id", "session_id", "reason"]
            assert resync["type"] == "session.resync_required" and resync["reason"] == "journal_gap"
            assert await late.closed() == 1000
        cases = [
            (
                {"session_id": sid, "resume_token": "x", "last_received_server_event_seq": -1},
                "invalid_session_resume",
            ),
            ({"session_id": "duplex-gone", "resume_token": "x"}, "session_resume_expired"),
            (
                {
                    "session_id": sid,
                    "resume_token": created["resume_token"],
                    "last_received_server_event_seq": 99,
                },
                "session_resume_conflict",
            ),
        ]
        for request, code in cases:
            async with peer(http, f"{base}/v1/duplex") as p:
                await p.send({"type": "session.resume", **request})
                error = await p.recv()
                assert isinstance(error["error"], dict) and error["error"]["code"] == code


async def test_detached_session_expires_after_grace() -> None:
    options = ReferenceOptions(fidelity="lenient", disconnect_grace_s=0.2)
    async with backend("duplex", options=options) as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            created = await opened(p)
        await asyncio.sleep(0.5)
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(resume_request(created))
            error = await p.recv()
            assert (
                isinstance(error["error"], dict)
                and error["error"]["code"] == "session_resume_expired"
            )


async def test_journal_overflow_is_sticky() -> None:
    options = ReferenceOptions(fidelity="lenient", replay_max_bytes=6000)
    async with backend("duplex", options=options) as (http, base):
        async with peer(http, f"{base}/v1/duplex?model=m") as p:
            created = await opened(p)
            for _ in range(40):
                await p.send({"type": "session.heartbeat"})
            notice = await p.until("session.resync_required")
            assert notice["reason"] == "journal_overflow" and "server_event_seq" not in notice
            after = await p.recv()
            assert after["type"] == "session.heartbeat_ack" and "server_event_seq" not in after
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(resume_request(created, 1))
            resync = await p.recv()
            assert resync["type"] == "session.resync_required" and resync["reason"] == "journal_gap"


async def test_receive_idle_timeout_detaches() -> None:
    async with backend("duplex") as (http, base):
        async with peer(http, f"{base}/v1/duplex?autostart=0") as p:
            await p.send(
                {"type": "session.update", "session": {"model": "m", "idle_timeout_s": 0.3}}
            )
            created = await opened(p)
            assert session_of(created)["idle_timeout_s"] == 0.3
            assert await p.closed() == 1000
        async with peer(http, f"{base}/v1/duplex") as p:
            await p.send(resume_request(created, 1))
            assert (await p.recv())["type"] == "session.resumed"
