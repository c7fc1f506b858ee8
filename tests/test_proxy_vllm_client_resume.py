"""vLLM-Omni's own ``DuplexClient`` (the 0.30.0 wheel) resuming through the proxy: a
dropped connection resumes with nothing lost or repeated over every upstream kind,
and a resume on another replica (sessions in redis) keeps ``auto_response``.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from proxy.reference import ReferenceOptions
from tests.native_client_session import pcm16k
from tests.redis_server import RedisServer
from tests.resume_client import wait_persisted
from tests.servers import host_port, load_clip, replica_pair, silence, tcp_link
from tests.vllm_client_through_proxy import IDS, MODES, next_response, of, play, through_proxy
from tests.vllm_omni_client import recording_connect

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_a_dropped_connection_resumes_with_nothing_lost_or_repeated(
    duplex_client_module: types.ModuleType, kind: str, mode: str
) -> None:
    """The connection drops mid-answer; the client's own reconnect sends
    ``session.resume`` with its token and last seq, and the answer plays on: every
    journaled event arrives once, in order, the audio and the transcript whole."""
    duplex = duplex_client_module
    received: list[dict[str, Any]] = []
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(500))
    reconnect = duplex.ReconnectPolicy(max_attempts=5, backoff_s=(0.1, 0.5))
    async with through_proxy(kind, reply_ms=3000) as base, tcp_link(base) as link:
        client = duplex.DuplexClient(
            link.url(base), model="m", connect=recording_connect(received), reconnect=reconnect
        )
        async with client:
            assert client.session_info["capabilities"]["proxy"]["mode"] == mode
            token = client.resume_token
            await client.stream_pcm(speech, realtime=False)
            await client.commit()
            response = await next_response(client)
            cut = False
            async for _chunk in response.audio():
                try:
                    await client.ack_playback(response.played_ms, response_id=response.response_id)
                except duplex.DuplexConnectionError:
                    pass  # into the dropped socket: acks are cumulative, a later one says it
                if not cut and response.played_ms >= 800:
                    cut = link.cut() > 0
            await response.wait(timeout_s=30)
            assert cut
            # Still the same session, talking on after the resume.
            await client.stream_pcm(speech, realtime=False)
            await client.commit()
            after = await next_response(client)
            await play(client, after)
        assert client.resume_token != token, "the token rotates on resume"
        (resumed,) = of(received, "session.resumed")
        assert resumed["session_id"] == client.session_id
        done = response.done_event.raw["response"]
        assert done["status"] == "completed", done
        assert response.played_ms == pytest.approx(3000, abs=50), "no audio lost or repeated"
        spoken = of(received, "response.output_audio_transcript.done")[0]["transcript"]
        assert response.transcript == spoken, "no text lost or repeated"
        seqs = [e["server_event_seq"] for e in received if "server_event_seq" in e]
        assert len(seqs) == len(set(seqs)), "nothing replayed twice"
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "nothing lost, in order"
        assert after.done_event.raw["response"]["status"] == "completed"
        assert not of(received, "error"), of(received, "error")


@pytest.mark.redis
async def test_a_resume_on_another_replica_keeps_auto_response(
    duplex_client_module: types.ModuleType, redis_server_session: RedisServer
) -> None:
    """Over a turn-based upstream the proxy holds the session: after a drop, the
    client's reconnect lands on another replica, which takes the session from the
    store, ``auto_response`` included, so the next commit is answered there; every
    journaled event still arrives once."""
    duplex = duplex_client_module
    url = redis_server_session.url
    received: list[dict[str, Any]] = []
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(500))
    reconnect = duplex.ReconnectPolicy(max_attempts=5, backoff_s=(0.1, 0.5))
    options = ReferenceOptions(fidelity="strict")
    async with (
        replica_pair("turn", url, reply_ms=1500, options=options) as (a, b),
        tcp_link(a) as link,
    ):
        client = duplex.DuplexClient(
            link.url(a.replace("http://", "ws://")),
            model="m",
            connect=recording_connect(received),
            reconnect=reconnect,
        )
        async with client:
            for replica_name in ("a", "b"):
                await client.stream_pcm(speech, realtime=False)
                await client.commit()
                response = await next_response(client)
                await play(client, response)
                assert response.done_event.raw["response"]["status"] == "completed"
                if replica_name == "a":
                    seq = max(e["server_event_seq"] for e in received if "server_event_seq" in e)
                    assert client.session_id is not None
                    await wait_persisted(url, client.session_id, seq=seq)
                    link.target = host_port(b)
                    resumed = asyncio.create_task(client.wait_for("session.resumed", timeout_s=20))
                    await asyncio.sleep(0)
                    assert link.cut() > 0
                    # What a client sends into a dropped socket is lost: speak once resumed.
                    await resumed
        assert len(of(received, "session.resumed")) == 1
        assert len(of(received, "response.done")) == 2
        seqs = [e["server_event_seq"] for e in received if "server_event_seq" in e]
        assert len(seqs) == len(set(seqs)), "nothing replayed twice"
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "nothing lost, in order"
        assert not of(received, "error"), of(received, "error")
