"""A native client resumed over a duplex upstream is told its session as it is now.

``session.resumed`` tells the proxy's current object over the upstream's object from
the opening (``shim/native_session_object.py``, ``resumed_over_upstream``): the
upstream's other keys stay, but each of its spellings of a rate, a format or the turn
detection tells the current one, and its runtime state from the opening is gone.
Read back as vLLM-Omni's own reader reads it, the object is the session as it is.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from tests.servers import connect, proxy_config, reference, replica, ws_url
from tests.test_native_g711_rates import wheel_session
from tests.test_native_relay import NATIVE, opening

__all__ = ["wheel_session"]

pytestmark = pytest.mark.timeout(120)

# What ``as_public_dict`` tells of the upstream's own run (engine_session.py).
RUNTIME = (
    "state",
    "turn_state",
    "epoch",
    "turn_id",
    "active_request_id",
    "active_response_id",
    "active_response_turn_id",
    "playback",
)


async def resumed_after(update: dict[str, Any], **opened: Any) -> dict[str, Any]:
    """The session object a native client opened as ``DuplexClient`` opens (with
    ``opened`` over it) is told on a resume after ``update``."""
    async with reference("duplex-no-barge-in", reply_ms=600) as up:
        config = proxy_config({"m": up}, store={"url": "memory://"})
        async with replica(config, "a") as base:
            async with connect(ws_url(base, **NATIVE)) as c1:
                await c1.send(opening(**opened))
                created = await c1.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
                await c1.until("session.updated")  # the opening's
                await c1.send({"type": "session.update", "session": update})
                await c1.until("session.updated")
                assert not [e for e in c1.events if e["type"] == "error"], c1.events
                seqs = [e["server_event_seq"] for e in c1.events if "server_event_seq" in e]
            query = {
                "session_id": created["session"]["id"],
                "resume_token": created["resume_token"],
                "last_received_server_event_seq": str(max(seqs)),
            }
            async with connect(ws_url(base, model=None, **NATIVE, **query)) as c2:
                first = await c2.recv()
                assert first["type"] == "session.resumed", first
    return first["session"]


async def test_a_resume_tells_no_stale_spelling_of_the_session(
    wheel_session: types.ModuleType,
) -> None:
    update = {
        "input_audio_format": "g711_ulaw",
        "sample_rate_hz": 8000,
        "turn_detection": {"type": "server_vad", "silence_duration_ms": 400},
    }
    session = await resumed_after(update)
    # The opening told flat 16 kHz PCM16 with no turn detection, at its runtime state.
    read = wheel_session.RealtimeInputDefaults().with_session_payload(session)
    assert (read.input_audio_format, read.input_sample_rate_hz) == ("g711_ulaw", 8000), session
    assert session["sample_rate_hz"] == 8000, session
    assert session["audio"]["input"]["sample_rate_hz"] == 8000, session
    assert session["audio"]["input"]["format"] == {"type": "audio/g711_ulaw", "rate": 8000}
    assert session["turn_detection"]["type"] == "server_vad", session
    assert session["turn_detection"]["silence_duration_ms"] == 400, session
    # vLLM-Omni refuses an object whose overlap_policy disagrees with its turn detection.
    assert session["overlap_policy"] == "barge_in_on_speech", session
    assert not [key for key in RUNTIME if key in session], session
    # The upstream's keys the proxy does not tell stay.
    assert session["idle_timeout_s"] is not None, session
    assert session["capabilities"]["proxy"]["mode"] == "barge_in_emulated", session


async def test_a_resume_replaces_nested_spellings_too(wheel_session: types.ModuleType) -> None:
    """A rate and turn detection told under ``audio`` (read there first) tell the current
    ones, the output's rate beside its format too."""
    vad = {"type": "server_vad"}
    audio = {
        "input": {"sample_rate_hz": 16000, "turn_detection": vad},
        "output": {"sample_rate_hz": 24000},
    }
    update = {
        "turn_detection": None,
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000}},
            "output": {"format": {"type": "audio/g711_alaw"}},
        },
    }
    session = await resumed_after(update, audio=audio)
    read = wheel_session.RealtimeInputDefaults().with_session_payload(session)
    assert (read.input_audio_format, read.input_sample_rate_hz) == ("pcm16", 24000), session
    assert read.output_audio_format == "g711_alaw", session
    assert session["audio"]["output"]["sample_rate_hz"] == 8000, session
    assert session["turn_detection"] is None, session
    assert session["overlap_policy"] == "listen_only", session
