"""On a model with ``supports_image_input`` vLLM-Omni refuses, keeping nothing, an
``input_image`` whose ``image_url`` is not a JPEG or PNG base64 data URL, or whose
data is no such image (``engine/duplex/session/control.py``,
``_on_conversation_item_create``): the GA relay's lock counts no user item for it,
so a ``response.create`` the upstream refuses for want of input leaves the
instructions free."""

from __future__ import annotations

import base64

import pytest

from tests.shim_ga_instructions_lock import changes, make_with, update

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(32)).decode()
GIF = "data:image/png;base64," + base64.b64encode(b"GIF89a" + bytes(32)).decode()


def _image_turn(url: str) -> bool:
    """Whether an instructions change is taken after a user image of ``url`` and a
    ``response.create``."""
    sc = make_with(supports_text_only_turn=True, supports_image_input=True)
    update(sc, {"instructions": "triage"})
    part = {"type": "input_image", "image_url": url}
    item = {"type": "message", "role": "user", "content": [part]}
    sc.client({"type": "conversation.item.create", "item": item})
    sc.client({"type": "response.create"})
    return changes(sc, "handoff")


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "data:image/gif;base64,R0lGODlh",
        GIF,
        "data:image/png;base64,",
    ],
)
def test_an_image_the_upstream_refuses_is_no_user_item(url: str) -> None:
    assert _image_turn(url)


def test_a_png_data_url_is_a_user_item() -> None:
    assert not _image_turn(PNG)  # the upstream answers it: the session is locked
