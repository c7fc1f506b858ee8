"""A ``conversation.item.create``'s item as vLLM-Omni 0.30.0 takes it, shared by the
GA relay's instructions lock (``shim/dialects/relay_context_lock.py``) and the strict
duplex stand-in (``proxy/reference/duplex_commands.py``).

Its ``protocol/realtime/items.py`` (``normalize_conversation_item``) makes an item a
``message`` unless it says otherwise, a message the user's unless it names a role,
and content that is not a list none at all. Its ``engine/duplex/session/control.py``
then refuses, keeping nothing, an item with an ``input_image`` part in a message not
the user's (``invalid_image``) or on a model without ``supports_image_input``
(``unsupported``), and on one with it an image whose ``image_url`` is not a JPEG or
PNG base64 data URL, or whose data is not one as ``protocol/realtime/items.py`` checks a
camera frame (``validate_realtime_video_frames``: ``invalid_image``). Its limit of 8
images or 4 MiB in the session's history (``input_backpressure``) is not followed here
(``docs/fidelity.md``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

IMAGE_NOT_USERS = ("invalid_image", "input_image is supported only in user messages")
IMAGE_UNSUPPORTED = ("unsupported", "This model does not support input_image conversation items")
IMAGE_NOT_DATA_URL = ("invalid_image", "input_image requires a JPEG or PNG base64 data URL")
_DATA_URLS = ("data:image/jpeg;base64,", "data:image/png;base64,")
_MAX_FRAME = 4_000_000  # base64 characters


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
    if not images:
        return IMAGE_UNSUPPORTED
    for part in parts:
        if not isinstance(part, Mapping) or part.get("type") != "input_image":
            continue
        url = part.get("image_url")
        if not isinstance(url, str) or not url.startswith(_DATA_URLS):
            return IMAGE_NOT_DATA_URL
        bad = _frame_refusal(url.split(",", 1)[1])
        if bad is not None:
            return "invalid_image", bad
    return None


def _frame_refusal(frame: str) -> str | None:
    """vLLM-Omni's refusal of one image's base64 data: empty, too long, not base64
    at its head, or not a JPEG or PNG there; None if it is taken."""
    if not frame:
        return "video_frames entries must be non-empty base64 strings"
    if len(frame) > _MAX_FRAME:
        return "video_frames entry exceeds 4MB base64; reduce capture resolution or JPEG quality"
    head = frame[:64]
    try:
        header = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return "video_frames entries must be valid base64"
    if not header.startswith((b"\xff\xd8", b"\x89PNG")):
        return "video_frames entries must be JPEG or PNG images"
    return None
