"""vLLM-Omni's own ``DuplexClient`` (the 0.30.0 wheel) through the proxy, over every upstream kind.

The client speaks the native protocol (``?duplex=1``, ``autostart=0``,
``session.update`` first with ``extra_body.auto_response``, 16 kHz appends tagged
with their ``format`` and ``sample_rate_hz``, ``commit{final: true}``, playback
acks, ``session.event_ack`` for every journaled event, heartbeats,
``session.close``), and gets the same session whatever the proxy runs in front of:

* a turn-based upstream -> ``duplex_emulated``;
* a strict duplex upstream without barge-in -> ``barge_in_emulated``;
* a strict duplex upstream with barge-in -> ``passthrough``.

Every upstream is a strict stand-in (``ReferenceOptions(fidelity="strict")``) and
the speech is the dev corpus; the proxy's own turn detection and barge-in (the
emulated modes) run on real Silero, a passthrough upstream decides with its own.
"""

from __future__ import annotations

import asyncio
import re
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pytest
import soxr

from proxy.reference import ReferenceOptions
from tests.redis_server import RedisServer
from tests.resume_client import wait_persisted
from tests.servers import (
    host_port,
    load_clip,
    proxy,
    proxy_config,
    reference,
    replica_pair,
    silence,
    tcp_link,
)
from tests.vllm_omni_client import recording_connect

pytestmark = pytest.mark.timeout(180)

MODES = [
    ("turn", "duplex_emulated"),
    ("duplex-no-barge-in", "barge_in_emulated"),
    ("duplex", "passthrough"),
]
IDS = [mode for _, mode in MODES]
REPLY_MS = 2000


def pcm16k(pcm24: bytes) -> bytes:
    """24 kHz corpus PCM16 as the client's 16 kHz PCM16."""
    samples = np.frombuffer(pcm24, dtype="<i2")
    out: np.ndarray = soxr.resample(samples, 24000, 16000)
    return out.astype("<i2").tobytes()


def heard_s(transcript: str) -> float:
    """How much audio the stand-in says it heard ("I heard about 3.7 seconds ...")."""
    found = re.search(r"heard about ([0-9.]+) seconds", transcript)
    assert found, transcript
    return float(found.group(1))


@asynccontextmanager
async def through_proxy(kind: str, reply_ms: int = REPLY_MS) -> AsyncIterator[str]:
    """A strict stand-in of ``kind`` behind the proxy; yields the proxy's ws:// base."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference(kind, reply_ms=reply_ms, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        yield base.replace("http://", "ws://")


async def play(client: Any, response: Any, paced: bool = False) -> None:
    """Take the response's audio for playback, acking what was played as it goes;
    ``paced`` plays it in real time, as a speaker would."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    async for _chunk in response.audio():
        await client.ack_playback(response.played_ms, response_id=response.response_id)
        ahead = response.played_ms / 1000 - (loop.time() - start)
        if paced and ahead > 0:
            await asyncio.sleep(ahead)
    await response.wait(timeout_s=30)


async def next_response(client: Any) -> Any:
    async with asyncio.timeout(30):
        async for response in client.responses():
            return response
    raise AssertionError("the session ended before an answer")


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == kind]


@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_a_spoken_turn_is_answered_and_the_next_one_too(
    duplex_client_module: types.ModuleType, kind: str, mode: str
) -> None:
    """The client's default session (no turn detection, auto_response): speak, commit,
    get the answer; acked in full, the next commit is answered as well."""
    duplex = duplex_client_module
    received: list[dict[str, Any]] = []
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(500))
    async with through_proxy(kind) as base:
        client = duplex.DuplexClient(
            base, model="m", connect=recording_connect(received), heartbeat_interval_s=0.3
        )
        async with client:
            assert client.session_info["capabilities"]["proxy"]["mode"] == mode
            assert client.session_id and client.resume_token
            answers = []
            for _ in range(2):
                await client.stream_pcm(speech, realtime=False)
                await client.commit()
                response = await next_response(client)
                await play(client, response)
                answers.append(response)
            first, second = answers
            for response in answers:
                assert response.done_event.raw["response"]["status"] == "completed"
                assert response.played_ms == pytest.approx(REPLY_MS, abs=50)
                # The 16 kHz appends reached the model as the 3.7 s they are.
                assert heard_s(response.transcript) == pytest.approx(3.7, abs=0.3)
            assert first.response_id != second.response_id
            await asyncio.sleep(0.5)  # a heartbeat or two
        assert of(received, "session.heartbeat_ack"), "heartbeats are answered"
        assert len(of(received, "session.closed")) == 1, "session.close is answered, once"
        assert not of(received, "error"), of(received, "error")


@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_speech_over_the_answer_cuts_it_and_is_answered_next(
    duplex_client_module: types.ModuleType, kind: str, mode: str
) -> None:
    """With server VAD (how a native client opts in to barge-in), the client's speech
    over an answer it is playing cuts that answer: the client sees
    ``input_audio_buffer.speech_started``, the answer's ``response.done`` with
    ``status: cancelled`` and ``reason: turn_detected`` (in the emulated modes also
    ``conversation.item.truncated`` at what it played), and then its speech answered."""
    duplex = duplex_client_module
    received: list[dict[str, Any]] = []
    question = pcm16k(load_clip("utt05_clean.wav") + silence(1000))
    interruption = pcm16k(load_clip("utt01_clean.wav") + silence(1500))
    config = duplex.SessionConfig(turn_detection={"type": "server_vad"})
    async with through_proxy(kind, reply_ms=6000) as base:
        client = duplex.DuplexClient(
            base, model="m", config=config, connect=recording_connect(received)
        )
        async with client:
            assert client.session_info["capabilities"]["proxy"]["mode"] == mode
            await client.stream_pcm(question, realtime=False)
            first = await next_response(client)
            talking: asyncio.Task[int] | None = None
            loop = asyncio.get_running_loop()
            start = loop.time()
            async for _chunk in first.audio():
                await client.ack_playback(first.played_ms, response_id=first.response_id)
                if talking is None and first.played_ms >= 1000:
                    talking = asyncio.create_task(
                        client.stream_pcm(interruption, realtime=True, chunk_ms=20)
                    )
                ahead = first.played_ms / 1000 - (loop.time() - start)
                if ahead > 0:
                    await asyncio.sleep(ahead)
            await first.wait(timeout_s=30)
            assert talking is not None
            await talking
            second = await next_response(client)
            await play(client, second)
        done = first.done_event.raw["response"]
        assert done["status"] == "cancelled", done
        assert done["status_details"]["reason"] == "turn_detected"
        assert first.played_ms < 6000, "the answer stopped before its end"
        started = [e["server_event_seq"] for e in of(received, "input_audio_buffer.speech_started")]
        assert len(started) == 2, "the question, then the interruption"
        if mode != "passthrough":
            (cut,) = of(received, "conversation.item.truncated")
            assert cut["audio_end_ms"] <= first.played_ms + 1
        assert second.done_event.raw["response"]["status"] == "completed"
        assert second.played_ms == pytest.approx(6000, abs=50)
        assert not of(received, "error"), of(received, "error")


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


async def test_what_a_turn_based_upstream_cannot_carry_is_refused_when_sent(
    duplex_client_module: types.ModuleType,
) -> None:
    """Instructions at open, tools and a text item during an answer: each gets a coded
    ``error`` when it is sent (the client raises it from ``responses()``), and the
    session and the answer in progress go on."""
    duplex = duplex_client_module
    received: list[dict[str, Any]] = []
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(500))
    config = duplex.SessionConfig(instructions="Answer briefly.")
    async with through_proxy("turn", reply_ms=3000) as base:
        client = duplex.DuplexClient(
            base, model="m", config=config, connect=recording_connect(received)
        )
        async with client:
            with pytest.raises(duplex.DuplexProtocolError) as refused:
                await next_response(client)
            assert refused.value.code == "unsupported_by_upstream"
            assert refused.value.raw["error"]["param"] == "session.instructions"
            await client.stream_pcm(speech, realtime=False)
            await client.commit()
            response = await next_response(client)
            text = {"type": "input_text", "text": "and in French?"}
            item = {"type": "message", "role": "user", "content": [text]}
            tools = [{"type": "function", "name": "lookup", "parameters": {}}]
            async for _chunk in response.audio():
                await client.ack_playback(response.played_ms, response_id=response.response_id)
                if item:
                    await client.send({"type": "conversation.item.create", "item": item})
                    await client.send({"type": "response.create", "response": {"tools": tools}})
                    item = {}
            await response.wait(timeout_s=30)
        codes = [(e["error"]["code"], e["error"].get("param")) for e in of(received, "error")]
        assert codes == [
            ("unsupported_by_upstream", "session.instructions"),
            ("unsupported_event", "type"),
            ("unsupported_by_upstream", "response.tools"),
        ]
        updated = of(received, "session.updated")
        # Unset, as vLLM-Omni's session object says it (null: shim/native_session_object.py).
        assert updated and all(e["session"]["instructions"] is None for e in updated), "applied"
        assert response.done_event.raw["response"]["status"] == "completed"
        assert response.played_ms == pytest.approx(3000, abs=50), "the answer went on whole"


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


@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_after_session_close_the_next_session_opens_at_once(
    duplex_client_module: types.ModuleType, kind: str, mode: str
) -> None:
    """``session.close`` ends the upstream's session as well: a strict upstream has one
    session slot (vLLM-Omni's default), and a session merely dropped would hold it
    for its disconnect grace."""
    duplex = duplex_client_module
    async with through_proxy(kind) as base:
        for _ in range(2):
            async with duplex.DuplexClient(base, model="m", handshake_timeout_s=10) as client:
                assert client.session_info["capabilities"]["proxy"]["mode"] == mode
