"""Resume on another replica sharing a real Redis (``docs/protocol.md``, "Resume"): a
turn-based answer cut by the move ends ``incomplete`` and the talk goes on, a duplex
upstream session is taken along with every word once, and a long unacked replay is the
same from every replica.
"""

from __future__ import annotations

import base64
import secrets

import pytest

from tests.resume_client import (
    answered,
    cut_answer_ends,
    mid_answer,
    redis_url,
    resumed,
    transcript_of,
    wait_persisted,
)
from tests.servers import connect, replica_pair, ws_url

__all__ = ["redis_url"]  # fixtures, used by name


@pytest.mark.redis
async def test_resume_on_another_replica_ends_a_turn_based_response_and_talks_on(
    redis_url: str,
) -> None:
    async with (
        replica_pair("turn", redis_url, reply_ms=3000) as (a, b),
    ):
        async with connect(ws_url(a)) as c1:
            s = await mid_answer(c1)
            s.take(c1)
            rid = c1.of("response.created")[-1]["response"]["id"]
        async with connect(ws_url(b)) as c2:
            first = await resumed(c2, s)
            assert first["session"]["capabilities"]["supports_session_resume"] is True
            # Never silently: the response the old upstream was producing ends here.
            done = await cut_answer_ends(c2, rid)
            details = done["response"]["status_details"]  # its cause, in GA's shape
            assert details.get("reason") or details["error"]["code"] == "upstream_lost"
            await answered(c2)
            s.take(c2)
        s.assert_exactly_once()


@pytest.mark.redis
async def test_resume_on_another_replica_takes_the_duplex_upstream_session_along(
    redis_url: str,
) -> None:
    """The upstream resumes its own session for the new replica: the answer goes on,
    every word of it exactly once, and the old replica lets go."""
    # The upstream's resume token is stored only sealed, so only with a key.
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    async with (
        replica_pair("duplex-no-barge-in", redis_url, reply_ms=3000, secret_key=key) as (a, b),
    ):
        async with connect(ws_url(a)) as c1:
            s = await mid_answer(c1)
            s.take(c1)
            rid = c1.of("response.created")[-1]["response"]["id"]
            # The old connection stays open while the client resumes elsewhere.
            async with connect(ws_url(b)) as c2:
                await resumed(c2, s)
                await c1.until("session.replaced")
                full = await c2.until("response.output_audio_transcript.done", timeout=20)
                done = await c2.until("response.done", timeout=20)
                assert done["response"]["id"] == rid
                assert done["response"]["status"] == "completed"
                s.take(c2)
                heard = transcript_of(s.events, rid)
                assert heard and heard == full["transcript"], "nothing lost, nothing twice"
                await answered(c2)
                s.take(c2)
        s.assert_exactly_once()


@pytest.mark.redis
async def test_replay_of_many_unacked_events_is_the_same_on_every_replica(redis_url: str) -> None:
    async with (
        replica_pair("turn", redis_url, reply_ms=2500) as (a, b),
    ):
        async with connect(ws_url(a)) as c1:
            s = await mid_answer(c1, 2)
            s.take(c1)
        cut, token = s.last, s.token
        # The session talks on into its journal; the client never acks.
        async with connect(ws_url(a)) as c2:
            await resumed(c2, s)
            await c2.until("response.done", timeout=20)
            reference_replay = [e for e in c2.events if "server_event_seq" in e]
        head = reference_replay[-1]["server_event_seq"]
        deltas = [e for e in reference_replay if e["type"] == "response.output_audio.delta"]
        assert len(deltas) >= 20, "many audio deltas unacked"
        await wait_persisted(redis_url, s.sid, seq=head)
        for base in (b, b, a):  # from the store, then local on b, then from the store on a
            async with connect(ws_url(base)) as c:
                await resumed(c, s, last=cut)
                while not c.events or c.events[-1].get("server_event_seq") != head:
                    await c.recv()
                replay = [e for e in c.events if "server_event_seq" in e]
            assert replay == reference_replay, "same events, same seqs, same content"
            await wait_persisted(redis_url, s.sid, seq=head)
        s.events = s.events[:cut] + reference_replay
        s.assert_exactly_once()
        assert token != s.token
