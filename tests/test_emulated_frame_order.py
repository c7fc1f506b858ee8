"""An emulated session takes its client's frames in the order they were sent, whichever
way each one goes onto the session's queue (``proxy/emulated/feeders.py``): read
before the session was ready, read before the hand-over to the reader, from the
client socket's data callback while a credit is free (``ClientFeed.take``), or from
the reader's task once the session is behind and it waits for a credit
(``ClientFeed.sink``).

A real client sends audio appends and control events interleaved, all at once, then
paced, to a session whose queue holds two frames (``session_queue_frames``), so the
callback and the reader both take frames; ``barge_in_emulated`` relays both kinds
upstream as they come, and a tap in front of the duplex reference backend sees the order. With the
direct paths of ``proxy/ws_direct.py`` on and off: the same order.
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from proxy import ws_direct
from proxy.client_frames import ClientFrame
from proxy.emulated.feeders import ClientFeed
from tests.servers import connect, proxy, proxy_config, reference, silence, ws_url
from tests.upstream_tap import upstream_tap

RELAYED = ("input_audio_buffer.append", "conversation.item.create")


@pytest.fixture(params=[True, False], ids=["direct", "queued"])
def ways(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The direct paths on or off; counts the frames each way onto the queue took."""
    monkeypatch.setattr(ws_direct, "ENABLED", request.param)
    counts = {"callback": 0, "reader": 0}
    take, sink = ClientFeed.take, ClientFeed.sink

    def taken(self: ClientFeed, frame: ClientFrame) -> None:
        counts["callback"] += 1
        take(self, frame)

    async def sunk(self: ClientFeed, frame: ClientFrame) -> None:
        counts["reader"] += 1
        await sink(self, frame)

    monkeypatch.setattr(ClientFeed, "take", taken)
    monkeypatch.setattr(ClientFeed, "sink", sunk)
    return counts


def event(i: int, audio: str) -> dict[str, object]:
    if i % 7 == 3:
        text = {"type": "input_text", "text": f"note {i}"}
        item = {"type": "message", "role": "user", "content": [text]}
        return {"type": "conversation.item.create", "event_id": f"e{i}", "item": item}
    return {"type": "input_audio_buffer.append", "event_id": f"e{i}", "audio": audio}


async def test_audio_and_control_events_reach_the_upstream_in_order(
    ways: dict[str, int],
) -> None:
    n_early, n_burst, n = 20, 200, 300
    audio = base64.b64encode(silence(20)).decode()
    server = {"session_queue_frames": 2, "input_realtime_factor": 1000}
    async with (
        reference("duplex-no-barge-in") as up,
        upstream_tap(up) as (tap, tapped),
        proxy(proxy_config({"m": tapped}, server=server)) as base,
        connect(ws_url(base)) as c,
    ):
        went: set[object] = set()  # the event ids that went upstream
        arrived = asyncio.Event()

        def on_sent(_no: int, ev: dict[str, object]) -> None:
            went.add(ev.get("event_id"))
            arrived.set()

        async def upstream_has(event_id: str) -> None:
            async with asyncio.timeout(10):
                while event_id not in went:
                    arrived.clear()
                    await arrived.wait()

        tap.on_sent = on_sent
        for i in range(n_early):  # before the session is ready
            await c.send(event(i, audio))
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
        for i in range(n_early, n_burst):  # at once: the session falls behind
            await c.send(event(i, audio))
        # Paced: each once the one before went upstream, so the session has caught up
        # and a credit is free whatever the machine's load (the data callback's way).
        for i in range(n_burst, n):
            await upstream_has(f"e{i - 1}")
            await c.send(event(i, audio))
        await upstream_has(f"e{n - 1}")
    relayed = [e["event_id"] for e in tap.sent[0] if e.get("type") in RELAYED]
    assert relayed == [f"e{i}" for i in range(n)]
    assert len(tap.sent) == 1  # one upstream session heard them all
    # Both ways onto the queue were taken with the direct paths on; only the reader's off.
    assert ways["reader"] > 0
    assert bool(ways["callback"]) is ws_direct.ENABLED
