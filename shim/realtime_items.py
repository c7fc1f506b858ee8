"""A ``conversation.item.create``'s item as vLLM-Omni 0.30.0 takes it, shared by the
GA relay's instructions lock (``shim/dialects/relay_context_lock.py``) and the strict
duplex stand-in (``proxy/reference/duplex_commands.py``).

Its ``protocol/realtime/items.py`` (``normalize_conversation_item``) makes an item a
``message`` unless it says otherwise, a message the user's unless it names a role,
and content that is not a list none at all. Its ``engine/duplex/session/control.py``
then refuses, keeping nothing, an item with an ``input_image`` part in a message not
the user's (``invalid_image``) or on a model without ``supports_image_input``
(``unsupported``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

IMAGE_NOT_USERS = ("invalid_image", "input_image is supported only in user messages")
IMAGE_UNSUPPORTED = ("unsupported", "This model does not support input_image conversation items")


def normalized(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item with its ``type``, ``role`` and ``content`` as vLLM-Omni reads them."""
    out = dict(item)
    out.setdefault("type", "message")
    if "role" not in out and out["type"] == "message":
        out["role"] = "user"
    if not isinstance(out.get("content"), list):
        out["content"] = []
    return out


def image_refusal(item: Mapping[str, Any], images: bool) -> tuple[str, str] | None:
    """The error (code, message) a normalized item is refused with for its images, on a
    model that takes them (``images``) or not; None if it has none or is taken."""
    content = item.get("content")
    parts = content if isinstance(content, list) else []
    if not any(isinstance(p, Mapping) and p.get("type") == "input_image" for p in parts):
        return None
    if item.get("role") != "user":
        return IMAGE_NOT_USERS
    return None if images else IMAGE_UNSUPPORTED
