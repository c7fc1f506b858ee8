"""GA details an outside client relies on, through the official ``openai`` SDK.

Each test holds one rule of the OpenAI Realtime GA API that a client written against
OpenAI (and never against this proxy) depends on: a flag of ``turn_detection`` that is
honoured, an error code it matches on, a server event its generated types accept.
Every event received is checked against the SDK's own GA types.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from openai.resources.realtime.realtime import AsyncRealtimeConnection

from tests.servers import load_clip, silence
from tests.test_openai_sdk import (
    GA_EVENTS,
    MODES,
    append_audio,
    as_dict,
    events_until_response_done,
    first_session_created,
    pcm_session,
    pressed_turn,
    sdk_connection,
)

# OpenAI's words for a response.cancel with no response in progress.
OPENAI_NO_ACTIVE_RESPONSE = "Cancellation failed: no active response found"


def user_text(item_id: str, text: str) -> dict[str, Any]:
    """A user's text message item, as a client creates it."""
    return {
        "id": item_id,
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    }


async def events_for(conn: AsyncRealtimeConnection, seconds: float) -> list[dict[str, Any]]:
    """Every event of the next ``seconds``, each checked against the GA types."""
    events: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(seconds):
            async for event in conn:
                events.append(as_dict(event))
                GA_EVENTS.validate_python(events[-1])
    except TimeoutError:
        pass
    return events


async def until(conn: AsyncRealtimeConnection, kind: str) -> list[dict[str, Any]]:
    """Events up to the first of ``kind``, each checked against the GA types."""
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(20):
        async for event in conn:
            events.append(as_dict(event))
            GA_EVENTS.validate_python(events[-1])
            if events[-1]["type"] == kind:
                return events
    raise AssertionError(f"connection ended before {kind}: {[e['type'] for e in events]}")


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


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_truncate_of_a_content_part_other_than_the_audio_is_refused(
    kind: str, mode: str
) -> None:
    """An assistant item's audio is content part 0: a truncate naming another part is an
    error that names ``content_index`` and the client's event, and truncates nothing."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await pressed_turn(conn, "utt05_clean.wav")
        done = (await events_until_response_done(conn))[-1]
        [item] = done["response"]["output"]
        await conn.conversation.item.truncate(
            item_id=item["id"], content_index=2, audio_end_ms=100, event_id="evt_cut"
        )
        after = await events_for(conn, 1.5)
        assert "conversation.item.truncated" not in [e["type"] for e in after], after
        [error] = [e for e in after if e["type"] == "error"]
        assert error["error"]["code"] == "invalid_value"
        assert error["error"]["param"] == "content_index"
        assert error["error"]["event_id"] == "evt_cut"
        # The item is still whole: a truncate of its audio part still works.
        await conn.conversation.item.truncate(item_id=item["id"], content_index=0, audio_end_ms=100)
        [truncated] = [e for e in await until(conn, "conversation.item.truncated")][-1:]
        assert truncated["audio_end_ms"] == 100


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_cancel_with_no_response_in_progress_gets_openais_code(kind: str, mode: str) -> None:
    """GA's ``response_cancel_not_active`` in every mode (vLLM-Omni says
    ``response_not_active``), with the client's ``event_id``."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await conn.response.cancel(event_id="evt_cancel")
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


async def speak_at_pace(conn: AsyncRealtimeConnection, pcm: bytes, chunk_ms: int = 40) -> None:
    step = 24000 * 2 * chunk_ms // 1000
    for i in range(0, len(pcm), step):
        await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + step]).decode())
        await asyncio.sleep(chunk_ms / 1000)


async def answer_playing(conn: AsyncRealtimeConnection) -> list[dict[str, Any]]:
    """Server VAD on, a spoken turn, and its answer a second into playing: the events."""
    await first_session_created(conn)
    await conn.session.update(session=pcm_session())
    await until(conn, "session.updated")
    talk = asyncio.create_task(speak_at_pace(conn, load_clip("utt05_clean.wav") + silence(900)))
    events = await until(conn, "response.output_audio.delta")
    await talk
    await asyncio.sleep(1.0)
    return events


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


async def test_a_deleted_assistant_item_is_gone_for_retrieve_and_truncate() -> None:
    """Over a duplex upstream, once ``conversation.item.deleted`` is out, the item is
    neither retrieved nor truncated any more: each is an ``item_not_found`` naming the
    client's event, never a ``conversation.item.truncated`` of a deleted item."""
    async with sdk_connection("duplex") as conn:
        await first_session_created(conn)
        await pressed_turn(conn, "utt05_clean.wav")
        [item] = (await events_until_response_done(conn))[-1]["response"]["output"]
        await conn.conversation.item.delete(item_id=item["id"])
        deleted = (await until(conn, "conversation.item.deleted"))[-1]
        assert deleted["item_id"] == item["id"]
        await conn.conversation.item.retrieve(item_id=item["id"], event_id="evt_get")
        await conn.conversation.item.truncate(
            item_id=item["id"], content_index=0, audio_end_ms=100, event_id="evt_cut"
        )
        after = await events_for(conn, 1.5)
        kinds = [e["type"] for e in after]
        assert (
            "conversation.item.retrieved" not in kinds
            and "conversation.item.truncated" not in kinds
        )
        errors = {e["error"]["event_id"]: e["error"]["code"] for e in after if e["type"] == "error"}
        assert errors == {
            "evt_get": "item_retrieve_invalid_item_id",
            "evt_cut": "item_truncate_invalid_item_id",
        }, after


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_an_unknown_item_gets_openais_code_for_each_request(kind: str, mode: str) -> None:
    """GA names the request in the code of an unknown item's refusal:
    ``item_retrieve_invalid_item_id``, ``item_truncate_invalid_item_id``,
    ``item_delete_invalid_item_id`` (pipecat's retrieve waits for the first, with the
    ``rci_<item>`` event id it sent), each in OpenAI's words and naming the client's
    event. A delete over a turn-based upstream is ``unsupported_event`` (it keeps no
    conversation to delete from)."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await conn.conversation.item.retrieve(item_id="item_nope", event_id="rci_item_nope")
        await conn.conversation.item.truncate(
            item_id="item_nope", content_index=0, audio_end_ms=100, event_id="evt_cut"
        )
        await conn.conversation.item.delete(item_id="item_nope", event_id="evt_del")
        await conn.conversation.item.retrieve(item_id="item_gone")  # no event_id
        errors = [e for e in await events_for(conn, 2.0) if e["type"] == "error"]
        told = {
            e["error"].get("event_id"): (e["error"]["code"], e["error"]["message"]) for e in errors
        }
        words = "the item with id 'item_nope' does not exist."
        expected = {
            "rci_item_nope": ("item_retrieve_invalid_item_id", f"Error retrieving item: {words}"),
            "evt_cut": ("item_truncate_invalid_item_id", f"Error truncating item: {words}"),
            "evt_del": ("item_delete_invalid_item_id", f"Error deleting item: {words}"),
            None: (
                "item_retrieve_invalid_item_id",
                "Error retrieving item: the item with id 'item_gone' does not exist.",
            ),
        }
        if mode == "duplex_emulated":
            expected["evt_del"] = (
                "unsupported_event",
                "event type 'conversation.item.delete' is not supported over a turn-based upstream",
            )
        assert told == expected, errors


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in"])
async def test_an_item_created_at_the_root_is_told_with_no_item_before_it(kind: str) -> None:
    """``previous_item_id: "root"`` only names where a create inserts its item (LiveKit's
    agents create their first chat item so); ``conversation.item.added`` / ``created``
    name the item before it, here none: ``null``, never ``"root"``."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        item = user_text("item_first", "What is the capital of France?")
        await conn.conversation.item.create(item=item, previous_item_id="root")  # type: ignore[arg-type]
        told = [
            e for e in await events_for(conn, 1.5) if e.get("item", {}).get("id") == "item_first"
        ]
        kinds = [e["type"] for e in told]
        assert "conversation.item.added" in kinds, told
        for event in told:
            assert event.get("previous_item_id") is None, event


async def test_a_refusal_naming_no_event_is_told_for_the_request_it_answers() -> None:
    """The Agents SDK sends its retrieves and truncates with no ``event_id``. Over a
    duplex upstream a retrieve and a delete the upstream answered, and a truncate the
    proxy answered itself, are not what a later refusal of the same item answers: a
    second delete's refusal is the delete's."""
    async with sdk_connection("duplex") as conn:
        await first_session_created(conn)
        item = user_text("item_u1", "hello")
        await conn.conversation.item.create(item=item)  # type: ignore[arg-type]
        await until(conn, "conversation.item.done")
        await conn.conversation.item.retrieve(item_id="item_u1")
        await until(conn, "conversation.item.retrieved")
        await conn.conversation.item.truncate(item_id="item_u1", content_index=0, audio_end_ms=10)
        await conn.conversation.item.delete(item_id="item_u1")
        await until(conn, "conversation.item.deleted")
        await conn.conversation.item.delete(item_id="item_u1")
        errors = [e for e in await events_for(conn, 1.5) if e["type"] == "error"]
        assert [(e["error"]["code"], e["error"]["message"]) for e in errors] == [
            (
                "item_delete_invalid_item_id",
                "Error deleting item: the item with id 'item_u1' does not exist.",
            )
        ], errors


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_truncate_of_a_users_item_says_only_assistant_audio_is_truncated(
    kind: str, mode: str
) -> None:
    """An item that is there but is the user's is not "an item that does not exist":
    OpenAI's words, "Only model output audio messages can be truncated", in GA's code
    for a truncate it cannot apply."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        if mode == "duplex_emulated":  # its user items are the turns committed
            await pressed_turn(conn, "utt05_clean.wav")
            events = await events_until_response_done(conn)
            [committed] = [e for e in events if e["type"] == "input_audio_buffer.committed"]
            item_id = committed["item_id"]
        else:
            item_id = "item_u"
            item = user_text(item_id, "hello")
            await conn.conversation.item.create(item=item)  # type: ignore[arg-type]
            await until(conn, "conversation.item.done")
        await conn.conversation.item.truncate(
            item_id=item_id, content_index=0, audio_end_ms=10, event_id="evt_cut"
        )
        [error] = [e for e in await until(conn, "error")][-1:]
        assert (error["error"]["code"], error["error"]["message"]) == (
            "item_truncate_invalid_item_id",
            "Only model output audio messages can be truncated",
        ), error
        assert error["error"]["event_id"] == "evt_cut"
