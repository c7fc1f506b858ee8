"""A GA ``response.create``'s generation options through the ``openai`` SDK, in every mode.

No upstream here takes generation options per response (vLLM-Omni refuses them all in
its own code, naming none; the turn-based dialect has no way to carry them). A GA
client gets GA's envelope with ``unsupported_by_upstream`` naming the option and the
create, and no response; an option that asks for nothing is answered as GA answers it
(``shim/dialects/ga_generation_options.py``). Every event is checked against the
SDK's GA types.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.openai_sdk_client import (
    MODES,
    append_audio,
    assert_completed_with_audio,
    events_for,
    events_until_response_done,
    first_session_created,
    sdk_connection,
    until,
)
from tests.openai_sdk_turns import push_to_talk
from tests.servers import load_clip

ASKING = [
    ({"instructions": "Answer in French."}, "response.instructions"),
    ({"audio": {"output": {"voice": "marin"}}}, "response.audio.output.voice"),
    ({"max_output_tokens": 50}, "response.max_output_tokens"),
]
NOTHING: dict[str, Any] = {
    "tools": [],
    "tool_choice": "auto",
    "max_output_tokens": "inf",
    "audio": {"output": {"voice": None}},
}


async def committed_turn(conn: Any) -> None:
    await append_audio(conn, load_clip("utt04_clean.wav"))
    await conn.input_audio_buffer.commit()
    await until(conn, "conversation.item.done")


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_generation_option_is_refused_naming_it_and_nothing_else_is(
    kind: str, mode: str
) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await push_to_talk(conn)
        await committed_turn(conn)
        for n, (options, param) in enumerate(ASKING):
            await conn.send({"type": "response.create", "response": options, "event_id": f"e{n}"})
            events = await until(conn, "error")
            events += await events_for(conn, 0.5)
            assert "response.created" not in [e["type"] for e in events], events
            [error] = [e["error"] for e in events if e["type"] == "error"]
            assert error["code"] == "unsupported_by_upstream", error
            assert (error["param"], error["event_id"]) == (param, f"e{n}"), error
        # Options that ask for nothing: the committed turn is answered.
        await conn.send({"type": "response.create", "response": NOTHING})
        assert_completed_with_audio(await events_until_response_done(conn))


async def test_a_prompt_is_refused_and_no_tools_taken_alike_in_update_and_create() -> None:
    """Over a turn-based upstream a ``session.update`` and a ``response.create`` refuse
    the same values: a prompt asks for what the upstream cannot carry in either (it was
    taken and dropped in a create); ``tool_choice: "none"`` asks for nothing in either,
    the upstream taking no tools at all (it was refused in an update)."""
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        await push_to_talk(conn)
        await conn.send({"type": "session.update", "session": {"tool_choice": "none"}})
        events = await until(conn, "session.updated")
        assert not [e for e in events if e["type"] == "error"], events
        assert events[-1]["session"]["tool_choice"] == "none"
        await committed_turn(conn)
        asks = {"prompt": {"id": "pmpt_123"}}
        await conn.send({"type": "response.create", "response": asks, "event_id": "e_p"})
        events = await until(conn, "error")
        events += await events_for(conn, 0.5)
        assert "response.created" not in [e["type"] for e in events], events
        [error] = [e["error"] for e in events if e["type"] == "error"]
        assert (error["code"], error["param"]) == ("unsupported_by_upstream", "response.prompt")
        await conn.send({"type": "response.create", "response": {"tool_choice": "none"}})
        assert_completed_with_audio(await events_until_response_done(conn))
