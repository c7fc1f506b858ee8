"""What the strict duplex stand-in's VAD is told of a GA client's ``session.update``s in
``barge_in_emulated``: turn detection only when it changes (vLLM-Omni builds a fresh
detector on every update naming it: ``engine/duplex/turn_detection.py``,
``PendingTurnDetectionUpdate``), and a threshold it refuses as the nearest it takes
(``shim/ga_upstream.py``, ``shim/dialects/ga_session_update.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.servers import connect, proxy, proxy_config, reference, silence, ws_url
from tests.testaudio import vowel
from tests.upstream_tap import upstream_tap

ANSWERS = ("session.updated", "error")


def vad(threshold: float) -> dict[str, Any]:
    return {"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": threshold}}}}


async def test_the_upstreams_vad_hears_of_changes_only_and_in_what_it_takes() -> None:
    async with reference("duplex") as backend, upstream_tap(backend) as (tap, tapped):
        async with proxy(proxy_config({"m": tapped})) as base:
            answered = asyncio.Queue[str]()  # the stand-in's answer to each update
            tap.on_answered = lambda _, ev: (
                answered.put_nowait(ev["type"]) if ev["type"] in ANSWERS else None
            )
            async with connect(ws_url(base)) as c:
                await c.until("session.created")
                for session in ({"instructions": "be brief"}, vad(0.1), vad(0.1), vad(0.5)):
                    update = {"type": "session.update", "session": {"type": "realtime", **session}}
                    await c.send(update)
                    await c.until("session.updated")
                    async with asyncio.timeout(15):
                        assert await answered.get() == "session.updated", tap.answered[0]
        opening, *updates = [e["session"] for e in tap.sent[0] if e["type"] == "session.update"]
        assert opening["turn_detection"]["threshold"] == 0.5
        told = [u.get("turn_detection", "unsaid") for u in updates]
        assert [t if t == "unsaid" else t["threshold"] for t in told] == [
            "unsaid",  # instructions only: its VAD runs on
            0.16,  # the client's 0.1, which vLLM-Omni would refuse
            "unsaid",  # the same again
            0.5,
        ]
        assert updates[0]["instructions"] == "be brief"


async def test_an_update_that_keeps_the_turn_detection_loses_no_speech() -> None:
    """The strict stand-in's VAD, like vLLM-Omni's, loses the speech it is hearing when an
    update names ``turn_detection``: an instructions-only update as the user stops
    speaking must leave the utterance to end the turn, which is then answered."""
    async with reference("duplex") as backend, proxy(proxy_config({"m": backend})) as base:
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            await c.stream(vowel(1500, rate_hz=24000).astype("<i2").tobytes(), realtime=False)
            await c.until("input_audio_buffer.speech_started")
            update = {
                "type": "session.update",
                "session": {"type": "realtime", "instructions": "x"},
            }
            await c.send(update)
            await c.until("session.updated")  # the speech is over; no quiet heard yet
            await c.stream(silence(1500), realtime=False)
            await c.until("input_audio_buffer.committed")
            done = await c.until("response.done")
            assert done["response"]["status"] == "completed"
