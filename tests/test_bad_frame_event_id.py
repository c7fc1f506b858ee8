"""A refused frame names the client's ``event_id`` where it carried one.

A GA client matches an error to its request by ``error.event_id``: an event with no
string ``type``, nested too deeply or holding too many values is refused naming it
(``proxy/client_frames.py``). A native client's frame with no ``type`` is refused in
vLLM-Omni's words, which name no event (its ``entrypoints/duplex/serving.py``); the
proxy's own bounds name it for every client.
"""

from __future__ import annotations

import json

import pytest

from tests.servers import proxied_client

pytestmark = pytest.mark.timeout(60)

FRAMES = [
    {"event_id": "evt_bad", "type": 5},
    {"event_id": "evt_bad"},
    {"event_id": "evt_bad", "type": "session.update", "deep": json.loads("[" * 80 + "]" * 80)},
]


@pytest.mark.parametrize("native", [False, True], ids=["ga", "native"])
async def test_a_refused_frame_names_its_event(native: bool) -> None:
    async with proxied_client("turn", **({"duplex": "1"} if native else {})) as c:
        await c.until("session.created")
        for frame in FRAMES:
            await c.send(frame)
            refused = (await c.until("error"))["error"]
            if native and "deep" not in frame:  # (the nesting bound is the proxy's own)
                assert "event_id" not in refused, refused
            else:
                assert (refused["code"], refused["event_id"]) == ("invalid_event", "evt_bad")
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")  # the session goes on
