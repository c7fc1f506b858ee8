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
Here: turns, speech over the answer, what a turn-based upstream refuses, the next
session after a close; resumes: tests/test_proxy_vllm_client_resume.py.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from tests.native_client_session import pcm16k
from tests.servers import load_clip, silence
from tests.vllm_client_through_proxy import (
    IDS,
    MODES,
    REPLY_MS,
    heard_s,
    next_response,
    of,
    play,
    through_proxy,
)
from tests.vllm_omni_client import recording_connect

pytestmark = pytest.mark.timeout(180)


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
