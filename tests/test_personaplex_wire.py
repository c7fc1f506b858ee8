"""The strict PersonaPlex stand-in on the wire: appends longer than an 80 ms unit leave
audio waiting in the model's buffer; without ``extra_body.auto_response`` the model
gets one unit per commit; the lenient stand-in keeps no model buffer.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import numpy as np
import pytest
from aiohttp import WSMsgType

from proxy.reference.options import ReferenceOptions
from proxy.reference.personaplex_frames import UNIT_SAMPLES
from tests.personaplex_standin import float_payload, standin

pytestmark = pytest.mark.timeout(120)


async def _settle(ws: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
    """Every event up to the heartbeat's answer (the stand-in handles events in order)."""
    await ws.send_str(json.dumps({"type": "session.heartbeat"}))
    seen: list[dict[str, Any]] = []
    while True:
        msg = await ws.receive(timeout=10)
        assert msg.type == WSMsgType.TEXT, msg
        event = json.loads(msg.data)
        if event["type"] == "session.heartbeat_ack":
            return seen
        seen.append(event)


def _tone(n: int, rate: int = 24000) -> np.ndarray:
    t = np.arange(n) / rate
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


async def _send_float(ws: aiohttp.ClientWebSocketResponse, audio: np.ndarray, per: int) -> None:
    for i in range(0, audio.size, per):
        payload = float_payload(audio[i : i + per])
        await ws.send_str(json.dumps({**payload, "type": "input_audio_buffer.append"}))


@pytest.mark.parametrize(
    ("per", "kept"),
    [(2400, 20 * UNIT_SAMPLES), (UNIT_SAMPLES, 24 * UNIT_SAMPLES)],
    ids=["100ms", "80ms"],
)
async def test_one_unit_per_append_reaches_the_model(per: int, kept: int) -> None:
    total = 24 * UNIT_SAMPLES  # 1.92 s
    async with standin() as (url, inputs), aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as ws:
            session = {"model": "m", "extra_body": {"auto_response": True}}
            await ws.send_str(json.dumps({"type": "session.update", "session": session}))
            await _send_float(ws, _tone(total), per)
            seen = await _settle(ws)
            assert not [e for e in seen if e["type"] == "error"], seen
            (frames,) = inputs
            assert frames.appended_samples == total
            # 100 ms appends: twenty units for twenty appends, 320 ms still waiting.
            assert frames.delivered_samples == kept
            assert frames.pending_samples == total - kept
            assert frames.unit_sizes == {UNIT_SAMPLES}


async def test_without_auto_response_a_commit_hands_over_one_unit() -> None:
    async with standin() as (url, inputs), aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as ws:
            await ws.send_str(json.dumps({"type": "session.update", "session": {"model": "m"}}))
            await _send_float(ws, _tone(24000), UNIT_SAMPLES)
            await _send_float(ws, np.zeros(4800, dtype=np.float32), UNIT_SAMPLES)
            commit = {"type": "input_audio_buffer.commit", "response_create": True}
            await ws.send_str(json.dumps(commit))
            seen = await _settle(ws)
            assert "input_audio_buffer.committed" in [e["type"] for e in seen]
            (frames,) = inputs
            # Quiet appends never reach the buffer; the commit takes one unit of the rest.
            assert frames.appended_samples == 24000
            assert (frames.units, frames.delivered_samples) == (1, UNIT_SAMPLES)
            assert frames.pending_samples == 24000 - UNIT_SAMPLES


async def test_lenient_stand_in_has_no_model_buffer() -> None:
    lenient = ReferenceOptions(fidelity="lenient", profile="personaplex")
    async with standin(lenient) as (url, inputs), aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as ws:
            await ws.send_str(json.dumps({"type": "session.update", "session": {"model": "m"}}))
            await _send_float(ws, _tone(4800), 4800)
            assert not [e for e in await _settle(ws) if e["type"] == "error"]
            assert inputs == []
