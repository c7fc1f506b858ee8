"""GA's idle timeout while no client is attached: it waits.

A client whose connection drops without a close has its session kept for the
disconnect grace. Nobody is there to hear an answer or to be silent, so the idle
timeout neither runs nor fires meanwhile (``shim/idle_timeout.py``, ``away``): were it
to, the silent turns committed and answered would all be replayed at the resume. Once
a client is back the quiet goes on from where it stopped, the time away not counted,
as it does across a move to another replica.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from tests.resume_client import created, resumed, speak
from tests.servers import connect, reference, replica, store_config, tcp_link, ws_url

pytestmark = pytest.mark.timeout(90)

IDLE_MS = 5000


def update(event_id: str) -> dict[str, Any]:
    td = {"type": "server_vad", "idle_timeout_ms": IDLE_MS}
    pcm = {"type": "audio/pcm", "rate": 24000}
    session = {"type": "realtime", "audio": {"input": {"format": pcm, "turn_detection": td}}}
    return {"type": "session.update", "event_id": event_id, "session": session}


def audio_ms(events: list[dict[str, Any]]) -> float:
    deltas = [e["delta"] for e in events if e["type"] == "response.output_audio.delta"]
    return sum(len(base64.b64decode(d)) for d in deltas) / 48  # 24 kHz PCM16


async def test_a_client_away_in_its_grace_gets_no_idle_timeout_replayed() -> None:
    async with (
        reference("turn", reply_ms=800) as up,
        replica(store_config(up, "memory://", disconnect_grace_s=30), "a") as base,
    ):
        async with tcp_link(base) as link, connect(link.url(ws_url(base))) as c1:
            s = await created(c1)
            await c1.send(update("evt_first"))
            await c1.until("session.updated")
            await speak(c1)
            await c1.until("response.done", timeout=20)
            # The answer plays out at the client; then its connection drops, no close.
            await asyncio.sleep(audio_ms(c1.events) / 1000 + 0.3)
            s.take(c1)
            link.cut()
        # Away for longer than the timeout: it would have fired, and been answered.
        await asyncio.sleep(IDLE_MS / 1000 + 1.5)
        async with connect(ws_url(base)) as c2:
            await resumed(c2, s)
            # Whatever is replayed comes before the answer to this.
            await c2.send(update("evt_back"))
            await c2.until("session.updated")
            await c2.until("input_audio_buffer.timeout_triggered", timeout=IDLE_MS / 1000 + 5)
            await c2.until("response.done", timeout=20)
            s.take(c2)
    s.assert_exactly_once()
    kinds = [e["type"] for e in s.events]
    assert kinds.count("input_audio_buffer.timeout_triggered") == 1, kinds
    back = kinds.index("session.updated", kinds.index("response.done"))
    assert kinds.index("input_audio_buffer.timeout_triggered") > back, (
        "a timeout fired while the client was away, replayed on its return"
    )
