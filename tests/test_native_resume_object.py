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

from tests.native_client_session import NATIVE, opening
from tests.servers import connect, proxy_config, reference, replica, ws_url
from tests.wheel_realtime_session import wheel_session
from tests.wheel_turn_detection import wheel_turns

__all__ = ["wheel_session", "wheel_turns"]

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


async def resumed_after(
    update: dict[str, Any], *later: dict[str, Any], **opened: Any
) -> dict[str, Any]:
    """The session object a native client opened as ``DuplexClient`` opens (with
    ``opened`` over it) is told on a resume after ``update`` (and ``later`` ones)."""
    async with reference("duplex-no-barge-in", reply_ms=600) as up:
        config = proxy_config({"m": up}, store={"url": "memory://"})
        async with replica(config, "a") as base:
            async with connect(ws_url(base, **NATIVE)) as c1:
                await c1.send(opening(**opened))
                created = await c1.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
                await c1.until("session.updated")  # the opening's
                for each in (update, *later):
                    await c1.send({"type": "session.update", "session": each})
                    told = (await c1.until("session.updated"))["session"]
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
    if isinstance(told.get("turn_detection"), dict):
        # The upstream's own session.updated told its turn detection so: the same session.
        assert first["session"]["turn_detection"] == told["turn_detection"], (first, told)
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


@pytest.mark.parametrize(
    ("declared", "later"),
    [
        ({"type": "server_vad"}, None),
        ({"type": "server_vad", "create_response": False, "min_speech_duration_ms": 200}, None),
        # vLLM-Omni runs each declared object over its own defaults, not over the last.
        ({"type": "server_vad", "silence_duration_ms": 400}, {"type": "server_vad"}),
        # An update that names no turn detection leaves the detector running as it was.
        ({"type": "server_vad", "threshold": 0.6}, {"instructions": "Be brief."}),
    ],
)
async def test_a_resume_tells_turn_detection_as_the_upstream_runs_it(
    wheel_turns: types.ModuleType, declared: dict[str, Any], later: dict[str, Any] | None
) -> None:
    """The upstream detects the turns, so its values are the session's: vLLM-Omni fills
    a declared ``server_vad`` object with its own defaults and tells ``create_response``
    only where the client named it (``engine/duplex/turn_detection.py``,
    ``normalize_turn_detection_session_payload``), never the proxy's ``[vad]``."""
    updates = [{"turn_detection": declared}]
    if later is not None:
        updates.append(later if "type" not in later else {"turn_detection": later})
    session = await resumed_after(*updates)
    running = {"turn_detection": dict(later if later and "type" in later else declared)}
    wheel_turns.normalize_turn_detection_session_payload(running)
    assert session["turn_detection"] == running["turn_detection"], session
    assert session["overlap_policy"] == running["overlap_policy"], session


@pytest.mark.parametrize(
    "later",
    [
        [],
        [{"instructions": "Be brief."}],
        [{"input_audio_format": "g711_ulaw", "sample_rate_hz": 8000}],
        [{"overlap_policy": "listen_only"}],
    ],
)
async def test_a_resume_without_turn_detection_tells_the_opening_listen_only(
    later: list[dict[str, Any]],
) -> None:
    """A native client that never declares turn detection runs vLLM-Omni's default, none
    and ``listen_only`` (the opening's ``session.created`` says so); its resume says the
    same, whatever else it updated, not a ``server_vad`` object that barges in."""
    op = opening()
    del op["session"]["turn_detection"]
    async with reference("duplex-no-barge-in", reply_ms=600) as up:
        config = proxy_config({"m": up}, store={"url": "memory://"})
        async with replica(config, "a") as base:
            async with connect(ws_url(base, **NATIVE)) as c1:
                await c1.send(op)
                created = await c1.until("session.created")
                told = (await c1.until("session.updated"))["session"]
                for each in later:
                    await c1.send({"type": "session.update", "session": each})
                    told = (await c1.until("session.updated"))["session"]
                assert not c1.of("error"), c1.of("error")
                seqs = [e["server_event_seq"] for e in c1.events if "server_event_seq" in e]
            query = {
                "session_id": created["session"]["id"],
                "resume_token": created["resume_token"],
                "last_received_server_event_seq": str(max(seqs)),
            }
            async with connect(ws_url(base, model=None, **NATIVE, **query)) as c2:
                first = await c2.recv()
    opened, resumed = created["session"], first["session"]
    assert first["type"] == "session.resumed", first
    assert (opened.get("turn_detection"), opened.get("overlap_policy")) == (None, "listen_only")
    assert (told.get("turn_detection"), told.get("overlap_policy")) == (None, "listen_only")
    assert resumed.get("turn_detection") is None, resumed
    assert resumed.get("overlap_policy") == "listen_only", resumed
