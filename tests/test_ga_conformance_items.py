"""GA details an outside client relies on, through the official ``openai`` SDK:
conversation items.

A truncate, retrieve or delete of an item that is not there, not the assistant's
audio, or already deleted gets the code and words OpenAI gives (each naming the
client's event, or the request it answers when it names none); an item created at the
root is told with no item before it. Every event received is checked against the
SDK's own GA types.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.openai_sdk_client import (
    MODES,
    events_for,
    events_until_response_done,
    first_session_created,
    sdk_connection,
    until,
)
from tests.openai_sdk_turns import (
    pressed_turn,
)


def user_text(item_id: str, text: str) -> dict[str, Any]:
    """A user's text message item, as a client creates it."""
    return {
        "id": item_id,
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    }


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
    event, in every mode."""
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
        assert told == expected, errors


async def test_a_delete_of_an_item_a_turn_based_session_has_is_unsupported() -> None:
    """Over a turn-based upstream an item there is cannot leave the conversation (the
    dialect has no delete): ``unsupported_event``; an unknown one is refused as above."""
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        await pressed_turn(conn)
        events = await events_until_response_done(conn)
        [user_turn] = [e["item_id"] for e in events if e["type"] == "input_audio_buffer.committed"]
        await conn.conversation.item.delete(item_id=user_turn, event_id="evt_del")
        [error] = [e for e in await events_for(conn, 1.0) if e["type"] == "error"]
        assert error["error"]["code"] == "unsupported_event", error
        assert error["error"]["event_id"] == "evt_del"


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


async def test_an_answers_item_names_one_item_before_it_when_added_and_done() -> None:
    """``duplex_emulated``'s own answer: its item's ``conversation.item.added`` and
    ``conversation.item.done`` name the same item before it (the user's turn)."""
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        await pressed_turn(conn)
        events = await events_until_response_done(conn)
    [rid] = {e["response"]["id"] for e in events if e["type"] == "response.created"}
    item_id = f"item_{rid}"
    told = [
        (e["type"], e["previous_item_id"])
        for e in events
        if e["type"].startswith("conversation.item.") and e.get("item", {}).get("id") == item_id
    ]
    [user_turn] = [e["item_id"] for e in events if e["type"] == "input_audio_buffer.committed"]
    assert told == [
        ("conversation.item.added", user_turn),
        ("conversation.item.done", user_turn),
    ]
