"""A response's events nest as OpenAI GA sends them, through the ``openai`` SDK, in
every mode: ``response.created``, ``response.output_item.added``, then the item's
``conversation.item.added``, ``response.content_part.added``, the deltas, and at the
end the audio's and transcript's ``done``, ``response.content_part.done``,
``response.output_item.done``, ``conversation.item.done``, ``response.done``
(``shim/dialects/ga_item_order.py`` over a duplex upstream, which adds the item to the
conversation first). Every event is checked against the SDK's GA types.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.openai_sdk_client import (
    MODES,
    append_audio,
    events_until_response_done,
    first_session_created,
    sdk_connection,
)
from tests.openai_sdk_turns import push_to_talk
from tests.servers import load_clip

OPENING = [
    "response.created",
    "response.output_item.added",
    "conversation.item.added",
    "response.content_part.added",
]
CLOSING = [
    "response.content_part.done",
    "response.output_item.done",
    "conversation.item.done",
    "response.done",
]


def of_the_response(events: list[dict[str, Any]]) -> list[str]:
    """The types of the last response's events (the assistant item's, by its id)."""
    start = max(n for n, e in enumerate(events) if e["type"] == "response.created")
    [item] = events[-1]["response"]["output"]
    kinds = []
    for e in events[start:]:
        named = e.get("item", {}).get("id") if isinstance(e.get("item"), dict) else None
        if e["type"].startswith("response.") or named == item["id"]:
            kinds.append(e["type"])
    return [k for k in kinds if k != "conversation.item.created"]  # (GA's too; either way)


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_responses_events_nest_in_gas_order(kind: str, mode: str) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await push_to_talk(conn)
        for _ in range(2):  # several in a row
            await append_audio(conn, load_clip("utt04_clean.wav"))
            await conn.input_audio_buffer.commit()
            await conn.response.create()
            kinds = of_the_response(await events_until_response_done(conn))
            assert kinds[:4] == OPENING, kinds
            assert kinds[-4:] == CLOSING, kinds
            deltas = [n for n, k in enumerate(kinds) if k.endswith(".delta")]
            ends = [kinds.index(f"response.output_audio{s}.done") for s in ("", "_transcript")]
            assert deltas and 3 < min(deltas) and max(deltas) < min(ends), kinds
            assert max(ends) < kinds.index("response.content_part.done"), kinds
