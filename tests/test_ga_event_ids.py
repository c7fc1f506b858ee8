"""A GA client tells which of its events an ``error`` answers by ``error.event_id``.

Through the official ``openai`` SDK, in every mode, over the strict stand-ins: a
refusal of a ``response.create`` names that create, also where vLLM-Omni's own
refusal names none (``shim/dialects/ga_create_ids.py``). Every event is checked
against the SDK's GA types.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.openai_sdk_client import (
    MODES,
    append_audio,
    events_for,
    first_session_created,
    sdk_connection,
    until,
)
from tests.openai_sdk_turns import push_to_talk
from tests.servers import load_clip


def errors(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["error"] for e in events if e["type"] == "error"]


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_second_create_over_an_answer_is_refused_by_its_own_event_id(
    kind: str, mode: str
) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await push_to_talk(conn)
        await append_audio(conn, load_clip("utt04_clean.wav"))
        await conn.input_audio_buffer.commit(event_id="evt_commit")
        await conn.response.create(event_id="evt_first")
        await conn.response.create(event_id="evt_second")
        events = await until(conn, "response.done")
        assert events[-1]["response"]["status"] == "completed", events[-1]
        [refused] = errors(events)
        assert refused["code"] == "conversation_already_has_active_response", refused
        assert refused["event_id"] == "evt_second", refused


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_create_with_no_turn_to_answer_is_refused_by_its_event_id(
    kind: str, mode: str
) -> None:
    """The upstreams answer spoken turns only: a ``response.create`` with no committed
    audio waiting is refused (no response is created), naming the create."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await push_to_talk(conn)
        await conn.response.create(event_id="evt_nothing")
        events = await until(conn, "error")
        events += await events_for(conn, 1.0)
        assert "response.created" not in [e["type"] for e in events], events
        [refused] = errors(events)
        assert refused["code"] == "response_create_without_input", refused
        assert refused["event_id"] == "evt_nothing", refused
