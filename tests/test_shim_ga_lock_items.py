"""The user items the GA relay counts for whether a duplex upstream has fixed the
instructions (``shim/dialects/relay_context_lock.py``, ``user_item``) are the ones
vLLM-Omni keeps: the item as ``protocol/realtime/items.py`` normalizes it
(``shim/realtime_items.py``), and no ``input_image`` its model does not take
(``engine/duplex/session/control.py``)."""

from __future__ import annotations

from typing import Any

from tests.shim_ga_instructions_lock import changes, make_with, update
from tests.shim_script import Script

IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}


def _answered(item: dict[str, Any], **caps: Any) -> Script:
    sc = make_with(supports_text_only_turn=True, **caps)
    update(sc, {"instructions": "triage"})
    sc.client({"type": "conversation.item.create", "item": item})
    sc.client({"type": "response.create"})
    return sc


def test_a_message_naming_no_role_is_the_users() -> None:
    sc = _answered({"type": "message", "content": [{"type": "input_text", "text": "hi"}]})
    assert not changes(sc, "again")  # a text-only turn: the context is locked


def test_string_content_is_no_content() -> None:
    sc = _answered({"type": "message", "role": "user", "content": "hi"})
    assert changes(sc, "again")  # response_create_without_input upstream


def test_an_image_the_model_does_not_take_is_no_item() -> None:
    sc = _answered({"type": "message", "role": "user", "content": [IMAGE]})
    assert changes(sc, "again")  # refused upstream (unsupported), nothing kept


def test_an_image_the_model_takes_is_an_item() -> None:
    sc = _answered(
        {"type": "message", "role": "user", "content": [IMAGE]}, supports_image_input=True
    )
    assert not changes(sc, "again")
