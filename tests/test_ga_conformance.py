"""GA details an outside client relies on, through the official ``openai`` SDK: turns
and responses.

Each test holds one rule of the OpenAI Realtime GA API that a client written against
OpenAI (and never against this proxy) depends on: a flag of ``turn_detection`` that is
honoured, an error code it matches on (a cancel with nothing to cancel, a create
during a response), a server event its generated types accept. Every event received
is checked against the SDK's own GA types. The same for conversation items:
tests/test_ga_conformance_items.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai.resources.realtime.realtime import AsyncRealtimeConnection

from tests.openai_sdk_client import (
    GA_EVENTS,
    MODES,
    append_audio,
    as_dict,
    events_for,
    events_until_response_done,
    first_session_created,
    pcm_session,
    sdk_connection,
    until,
)
from tests.openai_sdk_turns import (
    answer_playing,
    pressed_turn,
    speak_at_pace,
)
from tests.servers import load_clip, silence

# OpenAI's words for a response.cancel with no response in progress.
OPENAI_NO_ACTIVE_RESPONSE = "Cancellation failed: no active response found"


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_server_vad_with_create_response_false_commits_and_waits_for_response_create(
    kind: str, mode: str
) -> None:
    """GA: under server VAD, ``create_response: false`` ends the turn with a commit and
    no response; the client asks for it with ``response.create``."""
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        vad = {"type": "server_vad", "create_response": False}
        await conn.session.update(session=pcm_session(turn_detection=vad))
        updated = await until(conn, "session.updated")
        turn = updated[-1]["session"]["audio"]["input"]["turn_detection"]
        assert turn["create_response"] is False
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1200))
        committed = await until(conn, "input_audio_buffer.committed")
        later = await events_for(conn, 2.5)
        kinds = [e["type"] for e in committed + later]
        assert "response.created" not in kinds, kinds
        assert "error" not in kinds, committed + later
        await conn.response.create()
        answer = await events_until_response_done(conn)
        assert answer[-1]["response"]["status"] == "completed", answer[-1]


@pytest.mark.parametrize("named", [None, "resp_nope"], ids=["unnamed", "named"])
@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_cancel_with_no_response_in_progress_gets_openais_code(
    kind: str, mode: str, named: str | None
) -> None:
    """GA's ``response_cancel_not_active`` in every mode (vLLM-Omni says
    ``response_not_active``, and nothing at all to one naming a response), with the
    client's ``event_id``."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        if named is None:
            await conn.response.cancel(event_id="evt_cancel")
        else:
            await conn.response.cancel(event_id="evt_cancel", response_id=named)
        [error] = [e for e in await until(conn, "error")][-1:]
        assert error["error"]["code"] == "response_cancel_not_active"
        assert error["error"]["event_id"] == "evt_cancel"
        assert error["error"]["message"] == OPENAI_NO_ACTIVE_RESPONSE


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_cancel_after_the_answer_ended_gets_openais_words(kind: str, mode: str) -> None:
    """The race every barge-in has in LiveKit's agents: its ``response.cancel`` reaches
    the server after the answer ended. OpenAI's words for it begin "Cancellation
    failed", which LiveKit (and others) drop as a harmless race; any other words are
    logged as an error and handed to the application."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await pressed_turn(conn, "utt05_clean.wav")
        await events_until_response_done(conn)
        await conn.response.cancel(event_id="evt_late")
        [error] = [e for e in await until(conn, "error")][-1:]
        assert error["error"]["code"] == "response_cancel_not_active"
        assert error["error"]["message"] == OPENAI_NO_ACTIVE_RESPONSE
        assert error["error"]["event_id"] == "evt_late"


async def test_output_audio_buffer_clear_with_nothing_playing_is_answered_in_ga_types() -> None:
    """Over a duplex upstream, a clear with nothing playing is answered with
    ``output_audio_buffer.cleared``, whose GA type needs a string ``response_id``."""
    async with sdk_connection("duplex") as conn:
        await first_session_created(conn)
        await conn.output_audio_buffer.clear()
        cleared = (await until(conn, "output_audio_buffer.cleared"))[-1]
        assert isinstance(cleared["response_id"], str)


async def test_interrupt_response_false_lets_the_answer_finish_then_answers_the_turn() -> None:
    """GA: with ``interrupt_response: false`` an answer in progress is not cut by the
    user's next turn; the turn is committed and answered once the answer is done."""
    async with sdk_connection("turn", reply_ms=6000) as conn:
        await first_session_created(conn)
        vad = {"type": "server_vad", "interrupt_response": False}
        await conn.session.update(session=pcm_session(turn_detection=vad))
        await until(conn, "session.updated")
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1200))
        first = (await until(conn, "response.created"))[-1]["response"]["id"]
        # The next turn, whole, while the 6 s answer still plays.
        await append_audio(conn, load_clip("utt04_clean.wav") + silence(1200))
        events = await until(conn, "response.done")
        assert events[-1]["response"]["id"] == first
        assert events[-1]["response"]["status"] == "completed", events[-1]["response"]
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.committed" in kinds
        assert "conversation.item.truncated" not in kinds
        second = await events_until_response_done(conn)
        assert second[-1]["response"]["id"] != first
        assert second[-1]["response"]["status"] == "completed"


async def test_a_barge_in_closes_the_cut_assistant_item_once() -> None:
    """Over a duplex upstream the proxy closes the item of the response it cut itself;
    the upstream's own ``conversation.item.done`` for it must not reach the client
    as a second one."""
    async with sdk_connection("duplex", reply_ms=8000) as conn:
        events = await answer_playing(conn)
        talk = asyncio.create_task(speak_at_pace(conn, load_clip("utt04_clean.wav") + silence(900)))
        events += await until(conn, "response.done")
        assert events[-1]["response"]["status"] == "cancelled", events[-1]["response"]
        await talk
        events += await events_for(conn, 3.0)
        done = [e["item"]["id"] for e in events if e["type"] == "conversation.item.done"]
        assert len(done) == len(set(done)), done


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_session_update_naming_a_model_is_applied_without_an_error(
    kind: str, mode: str
) -> None:
    """The Agents SDK names a model in every ``session.update`` (``gpt-realtime`` unless
    told otherwise); the route chose the upstream's model, so the update is applied
    and no refusal of a model change follows it."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        session = {**pcm_session(), "model": "gpt-realtime"}
        await conn.session.update(session=session)
        events = await until(conn, "session.updated")
        events += await events_for(conn, 1.5)
        assert [e for e in events if e["type"] == "error"] == []
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1200))
        answer = await events_until_response_done(conn)
        assert answer[-1]["response"]["status"] == "completed"


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_cancel_of_a_finished_response_while_another_runs_says_so(
    kind: str, mode: str
) -> None:
    """A ``response.cancel`` naming an earlier, finished response while another is in
    progress: "Cancellation failed", naming the response, never "no active response
    found" (one is active)."""
    async with sdk_connection(kind, reply_ms=3000) as conn:
        await first_session_created(conn)
        await pressed_turn(conn, "utt05_clean.wav")
        old = (await events_until_response_done(conn))[-1]["response"]["id"]
        await append_audio(conn, load_clip("utt05_clean.wav"))
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        await until(conn, "response.created")
        await conn.response.cancel(response_id=old, event_id="evt_old")
        [error] = [e for e in await until(conn, "error")][-1:]
        assert error["error"]["code"] == "response_cancel_not_active"
        assert error["error"]["message"] == f"Cancellation failed: response {old!r} is not active"
        assert error["error"]["event_id"] == "evt_old"


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_response_create_during_a_response_gets_openais_code(kind: str, mode: str) -> None:
    """GA's ``conversation_already_has_active_response`` in every mode (vLLM-Omni says
    ``response_already_active``), and the response in progress goes on."""
    async with sdk_connection(kind, reply_ms=3000) as conn:
        await first_session_created(conn)
        await pressed_turn(conn, "utt05_clean.wav")
        await until(conn, "response.created")
        await conn.response.create()
        events = await events_until_response_done_or_error(conn)
        [error] = [e for e in events if e["type"] == "error"]
        assert error["error"]["code"] == "conversation_already_has_active_response"
        if events[-1]["type"] != "response.done":
            events = await events_until_response_done(conn)
        assert events[-1]["response"]["status"] == "completed", events[-1]["response"]


async def events_until_response_done_or_error(
    conn: AsyncRealtimeConnection,
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(20):
        async for event in conn:
            events.append(as_dict(event))
            GA_EVENTS.validate_python(events[-1])
            if events[-1]["type"] == "error":
                return events
    raise AssertionError(f"connection ended early: {[e['type'] for e in events]}")
