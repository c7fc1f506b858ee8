"""A GA client's malformed request is refused, coded, and nothing starts.

``response.create`` with a ``response`` that is no object is ``invalid_value`` naming
it, as a ``session.update`` whose ``session`` is no object is: no response is
created (``shim/dialects/ga_response_create.py``). vLLM-Omni reads such a request as
one with no options, and a native client keeps that reading.
"""

from __future__ import annotations

import pytest

from tests.openai_sdk_client import MODES
from tests.servers import proxied_client

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_response_options_that_are_no_object_are_refused(kind: str, mode: str) -> None:
    async with proxied_client(kind) as c:
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await c.send({"type": "response.create", "event_id": "evt_rc", "response": "x"})
        refused = (await c.until("error"))["error"]
        assert (refused["code"], refused["param"], refused["event_id"]) == (
            "invalid_value",
            "response",
            "evt_rc",
        ), refused
        await c.send({"type": "session.update", "session": {"type": "realtime"}})
        await c.until("session.updated")  # the session goes on
        assert not c.of("response.created")


BAD_ITEMS = [
    ("x", "item"),
    ({"type": "message", "role": "robot", "content": []}, "item.role"),
    ({"type": "note", "role": "user", "content": []}, "item.type"),
]


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in"])
async def test_an_item_no_ga_type_describes_is_refused_never_told_back(kind: str) -> None:
    """Over a duplex upstream the item would be told back in events the client's SDK
    cannot read (``shim/dialects/ga_item_create.py``)."""
    async with proxied_client(kind) as c:
        await c.until("session.created")
        for i, (item, param) in enumerate(BAD_ITEMS):
            await c.send({"type": "conversation.item.create", "event_id": f"e{i}", "item": item})
            refused = (await c.until("error"))["error"]
            assert (refused["code"], refused["param"], refused["event_id"]) == (
                "invalid_value",
                param,
                f"e{i}",
            ), refused
        user = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        }
        await c.send({"type": "conversation.item.create", "item": user})
        added = await c.until("conversation.item.added")
        assert added["item"]["role"] == "user"
        assert all(e.get("item", {}).get("role") != "robot" for e in c.events)


WRONG_TYPES = [
    ({"audio": [1, 2]}, "session.audio"),
    ({"audio": {"input": "x"}}, "session.audio.input"),
    ({"instructions": 5}, "session.instructions"),
    ({"tools": "x"}, "session.tools"),
]


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_session_fields_of_the_wrong_type_are_refused(kind: str, mode: str) -> None:
    """Taken as nothing or passed on as they came, they were accepted without a word
    (``shim/session_options.py``); over a turn-based upstream the instructions and
    tools are refused as unsupported there first."""
    applied = 1  # the last, valid update; over a turn-based upstream each update whose
    # unsupported field alone is refused applies the rest (docs/protocol.md)
    async with proxied_client(kind) as c:
        await c.until("session.created")
        for i, (fields, param) in enumerate(WRONG_TYPES):
            update = {"type": "realtime", **fields}
            await c.send({"type": "session.update", "event_id": f"u{i}", "session": update})
            refused = (await c.until("error"))["error"]
            expected = "invalid_value"
            if mode == "duplex_emulated" and param in ("session.instructions", "session.tools"):
                expected, applied = "unsupported_by_upstream", applied + 1
            assert (refused["code"], refused["param"], refused["event_id"]) == (
                expected,
                param,
                f"u{i}",
            ), refused
        await c.send({"type": "session.update", "session": {"type": "realtime"}})
        await c.until("session.updated")
        await c.send({"type": "session.heartbeat"})  # (answered after what came before)
        await c.until("session.heartbeat_ack")
        assert len(c.of("session.updated")) == applied, "a refused update was applied"
