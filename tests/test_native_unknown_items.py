"""A native client's retrieve or truncate of an unknown item: vLLM-Omni's
``item_not_found``, "Conversation item not found: <id>", in every mode, where a GA
client gets GA's code for the request (``tests/test_ga_conformance_items.py``)."""

from __future__ import annotations

import pytest

from tests.servers import connect, proxy, proxy_config, reference, ws_url


@pytest.mark.parametrize("kind", ["duplex", "turn"])
async def test_a_native_clients_unknown_item_is_item_not_found(kind: str) -> None:
    async with (
        reference(kind) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, duplex="1")) as c,
    ):
        await c.until("session.created")
        await c.send({"type": "conversation.item.retrieve", "item_id": "item_x", "event_id": "e1"})
        await c.send(
            {
                "type": "conversation.item.truncate",
                "item_id": "item_x",
                "content_index": 0,
                "audio_end_ms": 10,
                "event_id": "e2",
            }
        )
        for _ in range(2):
            err = (await c.until("error"))["error"]
            assert (err["code"], err["message"]) == (
                "item_not_found",
                "Conversation item not found: item_x",
            ), err


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in"])
async def test_a_native_truncate_of_a_user_item_is_vllm_omnis_bad_event(kind: str) -> None:
    """A user item the upstream has is not one it does not have: vLLM-Omni's
    ``bad_event`` "conversation.item.truncate only supports assistant message items",
    in passthrough and in ``barge_in_emulated`` alike."""
    async with (
        reference(kind) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, duplex="1")) as c,
    ):
        await c.until("session.created")
        item = {"id": "item_u", "type": "message", "role": "user"}
        item["content"] = [{"type": "input_text", "text": "hello"}]
        await c.send({"type": "conversation.item.create", "item": item})
        await c.until("conversation.item.done")
        await c.send(
            {
                "type": "conversation.item.truncate",
                "item_id": "item_u",
                "content_index": 0,
                "audio_end_ms": 10,
                "event_id": "e3",
            }
        )
        err = (await c.until("error"))["error"]
        assert (err["code"], err["message"]) == (
            "bad_event",
            "conversation.item.truncate only supports assistant message items",
        ), err
