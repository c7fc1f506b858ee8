"""G.711 both ways for a vLLM-Omni-native client of the barge-in relay, as vLLM-Omni takes
it: μ-law appends, and answers in G.711 from the strict stand-in at the output rate
declared.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pybase64
import pytest
import soxr

from proxy.reference import ReferenceOptions
from shim.g711 import ULAW, g711_to_int16, int16_to_g711
from tests.native_client_session import native_session, opening, pcm16k, say
from tests.servers import connect, load_clip, reference, silence

pytestmark = pytest.mark.timeout(120)


async def test_g711_as_vllm_omni_takes_it_from_a_native_client() -> None:
    """vLLM-Omni takes ``g711_ulaw`` both ways from a native client: μ-law appends at
    8 kHz, and the answer as μ-law deltas labelled ``format: g711_ulaw``,
    ``sample_rate_hz: 8000`` (its ``protocol/realtime/audio.py``). Through the relay
    the same: the turn is heard (the stand-in says how long it was), the answer's
    deltas come as the upstream sent them, and its length is what was generated."""
    pcm8 = soxr.resample(
        np.frombuffer(load_clip("utt05_clean.wav") + silence(800), "<i2"), 24000, 8000
    )
    ulaw = int16_to_g711(pcm8.astype(np.int16), ULAW)
    rates = {"input": {"sample_rate_hz": 8000}, "output": {"sample_rate_hz": 8000}}
    g711 = opening(
        input_audio_format="g711_ulaw",
        output_audio_format="g711_ulaw",
        sample_rate_hz=8000,
        audio=rates,
    )
    async with native_session("duplex-no-barge-in", "barge_in_emulated", 2000, g711) as c:
        await say(c, ulaw, fmt="g711_ulaw", rate=8000)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        done = await c.until("response.done", timeout=30)
    assert not c.of("error"), c.of("error")
    assert done["response"]["status"] == "completed"
    transcript = done["response"]["output"][0]["content"][0]["transcript"]
    heard = re.search(r"heard about ([0-9.]+) seconds", transcript)
    assert heard and float(heard.group(1)) == pytest.approx(4.0, abs=0.3), transcript
    deltas = c.of("response.output_audio.delta")
    assert {(d.get("format"), d.get("sample_rate_hz")) for d in deltas} == {("g711_ulaw", 8000)}
    audio = b"".join(pybase64.b64decode(d["delta"]) for d in deltas)
    assert len(audio) == 2000 * 8, "one byte a sample at 8 kHz: the 2 s answer"
    assert np.abs(g711_to_int16(audio, ULAW).astype(np.int32)).max() > 1000, "not silence"


@pytest.mark.parametrize(
    ("output", "rate"), [({}, 8000), ({"format": {"type": "g711_alaw", "rate": 16000}}, 16000)]
)
async def test_the_stand_in_answers_g711_in_g711(output: dict[str, Any], rate: int) -> None:
    """vLLM-Omni converts each delta of a G.711 session's answer itself
    (``protocol/realtime/audio.py``, ``convert_output_audio``: to the declared output
    rate, else 8 kHz, labelled with the G.711 name); so does the strict stand-in."""
    session: dict[str, Any] = {"audio": {"output": output}} if output else {}
    if not output:
        session["output_audio_format"] = "g711_ulaw"
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("duplex", reply_ms=1000, options=options) as upstream,
        connect(upstream + "?duplex=1&autostart=0&model=m") as c,
    ):
        await c.send(
            opening(**session) if not output else opening(output_audio_format=None, **session)
        )
        await c.until("session.created")
        await say(c, pcm16k(load_clip("utt05_clean.wav")))
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        await c.until("response.done", timeout=30)
    deltas = c.of("response.output_audio.delta")
    name = "g711_alaw" if output else "g711_ulaw"
    assert {(d["format"], d["sample_rate_hz"]) for d in deltas} == {(name, rate)}
    audio = b"".join(pybase64.b64decode(d["delta"]) for d in deltas)
    assert len(audio) == pytest.approx(rate, abs=len(deltas)), "1 s, one byte a sample"
