"""A native client's retrieve or truncate of an unknown item: vLLM-Omni's
``item_not_found``, "Conversation item not found: <id>", in every mode, where a GA
client gets GA's code for the request (``tests/test_ga_conformance.py``)."""

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
