"""A native client's G.711 and input rate on real speech, straight to the strict duplex
stand-in and through the proxy in each emulated mode: untagged 16 kHz μ-law is heard
at 16 kHz, the flat ``sample_rate`` comes before ``audio.input``'s, and the session
object told goes back unrefused (the reference backend says how much it heard).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pytest
import soxr

from proxy.reference import ReferenceOptions
from shim.g711 import ULAW, int16_to_g711
from tests.native_client_session import native_session, opening
from tests.native_g711_sessions import b64, update
from tests.servers import Client, connect, load_clip, reference, silence

pytestmark = pytest.mark.timeout(120)


def ulaw(pcm24: bytes, rate: int) -> bytes:
    samples = soxr.resample(np.frombuffer(pcm24, "<i2"), 24000, rate)
    return int16_to_g711(samples.astype(np.int16), ULAW)


SPEECH = load_clip("utt05_clean.wav") + silence(800)  # 4.0 s at 24 kHz


@asynccontextmanager
async def session_through(
    through: str, opened: dict[str, Any], reply_ms: int = 1000
) -> AsyncIterator[Client]:
    """A native session opened with ``opened``, straight to the strict duplex
    stand-in or through the proxy in the mode named."""
    if through == "stand-in":
        options = ReferenceOptions(fidelity="strict")
        async with (
            reference("duplex", reply_ms=reply_ms, options=options) as upstream,
            connect(upstream + "?duplex=1&autostart=0&model=m") as c,
        ):
            await c.send(opened)
            await c.until("session.created")
            yield c
        return
    kind = {"barge_in_emulated": "duplex-no-barge-in", "duplex_emulated": "turn"}[through]
    async with native_session(kind, through, reply_ms, opened) as c:
        yield c


async def heard_s(c: Client) -> float:
    await c.send({"type": "input_audio_buffer.commit", "final": True})
    done = await c.until("response.done", timeout=30)
    assert not c.of("error"), c.of("error")
    transcript = done["response"]["output"][0]["content"][0]["transcript"]
    heard = re.search(r"heard about ([0-9.]+) seconds", transcript)
    assert heard, transcript
    return float(heard.group(1))


THROUGH = ["stand-in", "barge_in_emulated", "duplex_emulated"]


@pytest.mark.parametrize("through", THROUGH)
async def test_untagged_16_khz_mulaw_is_heard_at_16_khz(through: str) -> None:
    """``DuplexClient``'s opening with G.711 (its ``sample_rate_hz`` 16000) and appends
    that name no format or rate: vLLM-Omni reads them at 16 kHz. So do the stand-in
    and the proxy (over a turn-based upstream the proxy itself reads them)."""
    opened = opening(input_audio_format="g711_ulaw", output_audio_format="g711_ulaw")
    async with session_through(through, opened) as c:
        audio = ulaw(SPEECH, 16000)
        for i in range(0, len(audio), 3200):
            await c.send({"type": "input_audio_buffer.append", "audio": b64(audio[i : i + 3200])})
        assert await heard_s(c) == pytest.approx(4.0, abs=0.3)


@pytest.mark.parametrize("through", THROUGH)
async def test_the_flat_sample_rate_comes_before_audio_input(through: str) -> None:
    """The flat ``sample_rate`` (24 kHz) wins over ``audio.input.sample_rate_hz``
    (16 kHz): untagged 24 kHz PCM16 lasts 4 s."""
    opened = opening(sample_rate_hz=None, sample_rate=24000)
    async with session_through(through, opened) as c:
        await say_untagged(c, SPEECH)
        assert await heard_s(c) == pytest.approx(4.0, abs=0.3)


@pytest.mark.parametrize("through", THROUGH)
async def test_the_told_session_object_goes_back_unrefused(through: str) -> None:
    """A native client that sends back the session object it was told (a G.711 one:
    vLLM-Omni names it ``{"type": "audio/g711_ulaw", "rate": 16000}``) is not
    refused, and its audio is read as before."""
    opened = opening(input_audio_format="g711_ulaw")
    async with session_through(through, opened) as c:
        created = c.of("session.created")[0]["session"]
        told = {k: v for k, v in created.items() if k in ("input_audio_format", "audio")}
        assert told["input_audio_format"] == "g711_ulaw"
        await c.send(update(**told))
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
        assert not c.of("error"), c.of("error")
        audio = ulaw(SPEECH, 16000)
        for i in range(0, len(audio), 3200):
            await c.send({"type": "input_audio_buffer.append", "audio": b64(audio[i : i + 3200])})
        assert await heard_s(c) == pytest.approx(4.0, abs=0.3)


async def say_untagged(c: Client, pcm: bytes) -> None:
    for i in range(0, len(pcm), 9600):
        await c.send({"type": "input_audio_buffer.append", "audio": b64(pcm[i : i + 9600])})
