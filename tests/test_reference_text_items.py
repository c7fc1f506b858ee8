"""Which user input a strict duplex stand-in keeps waiting for a ``response.create``,
as vLLM-Omni 0.30.0 does: it normalizes an item before it reads it
(``protocol/realtime/items.py``, ``normalize_conversation_item``: a message without a
role is the user's, content that is no list is none), counts a user message with
content (``engine/duplex/session/control.py``, ``_on_conversation_item_create``), counts
a session's ``initial_user_text`` as one at open (``engine/duplex/session/
engine_session.py``, ``__post_init__``), and refuses an ``input_image`` item on a model
without ``supports_image_input``. Unanswered items make a ``response.create`` with no
audio a text-only turn, refused here (``text_only_turn_unsupported``); none make it
``response_create_without_input`` (``engine/duplex/session/runner.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reference_strict_client import Peer, backend, session

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

TEXT = [{"type": "input_text", "text": "hi"}]
IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}


async def error_code(p: Peer, event: dict[str, Any]) -> str:
    await p.send(event)
    error = (await p.until("error"))["error"]
    assert isinstance(error, dict)
    return str(error["code"])


async def created(p: Peer, item: dict[str, Any]) -> dict[str, Any]:
    await p.send({"type": "conversation.item.create", "item": item})
    made = (await p.until("conversation.item.created"))["item"]
    assert isinstance(made, dict)
    return made


@pytest.mark.parametrize(
    ("item", "counted"),
    [
        ({"type": "message", "content": TEXT}, True),  # no role: the user's
        ({"content": TEXT}, True),  # no type either: a message
        ({"type": "message", "role": "user", "content": "hi"}, False),  # no list: no content
        ({"type": "message", "role": "assistant", "content": TEXT}, False),
    ],
)
async def test_a_user_item_is_counted_as_vllm_omni_normalizes_it(
    item: dict[str, Any], counted: bool
) -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        made = await created(p, item)
        assert made["type"] == "message" and isinstance(made["content"], list)
        want = "text_only_turn_unsupported" if counted else "response_create_without_input"
        assert await error_code(p, {"type": "response.create"}) == want


async def test_initial_user_text_waits_for_a_response() -> None:
    async with backend() as (http, url), session(http, url, initial_user_text="hi") as (p, _):
        assert await error_code(p, {"type": "response.create"}) == "text_only_turn_unsupported"


async def test_an_image_item_is_refused_and_the_session_goes_on() -> None:
    user = {"type": "message", "role": "user", "content": [*TEXT, IMAGE]}
    mine = {"type": "message", "role": "assistant", "content": [IMAGE]}
    async with backend() as (http, url), session(http, url) as (p, _):
        create = {"type": "conversation.item.create"}
        assert await error_code(p, {**create, "item": user}) == "unsupported"
        assert await error_code(p, {**create, "item": mine}) == "invalid_image"
        # Nothing was kept: no turn of text items waits.
        assert await error_code(p, {"type": "response.create"}) == "response_create_without_input"
