"""The client's updates to a barge-in relay by script, and what a fresh upstream is then
given (tests/test_shim_relay_kept_*.py, ``shim/dialects/relay_kept_update.py``):
sequences of updates naming a setting another way than the ones before, or by a value
vLLM-Omni ignores; and the settings a client opened its upstream session with.
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action
from shim.inputs import UpstreamLost
from tests.shim_script import Script, client_events, upstream_events

VAD = {"type": "server_vad", "silence_duration_ms": 400}
POLICIES = ("overlap_policy", "playback_commit_policy")
BARGE_IN = "barge_in_on_speech"
ACK = "ack_only"
VOICE_ECHO = {"audio": {"output": {"voice": "echo", "format": {"type": "audio/g711_ulaw"}}}}
# What a client opened its upstream session with: the kept update starts from it
# (tests/test_relay_kept_*.py).
OPENED = {
    "instructions": "Be brief.",
    "voice": "alloy",
    "turn_detection": {"type": "server_vad"},
    "extra_body": {"auto_response": True, "overlap_silence_rms": 0.02},
    "overlap_silence_rms": 0.01,
    "model": "m",
}
# Updates naming a setting another way than the ones before, or by a value vLLM-Omni
# ignores (``engine/duplex/config.py``, ``apply_realtime_update``).
SEQUENCES: list[tuple[dict[str, Any], ...]] = [
    ({"voice": "alloy"}, {"audio": {"output": {"voice": "echo"}}}),
    (VOICE_ECHO, {"voice": None}),
    ({"speed": 1.5}, {"audio": {"output": {"speed": 0.8}}}, {"instructions": "x"}),
    ({"max_response_output_tokens": 100}, {"max_output_tokens": 200}),
    ({"max_output_tokens": 100}, {"max_tokens": 50, "max_response_output_tokens": "inf"}),
    ({"modalities": ["text", "audio"]}, {"output_modalities": ["audio"]}),
    ({"output_modalities": ["audio"]}, {"modalities": ["text", "audio"]}),
    ({"extra_body": {"overlap_policy": "barge_in", "a": 1}}, {"extra_body": None}),
    (
        {**VOICE_ECHO, "instructions": "x"},
        {"audio": {"input": {"turn_detection": VAD}}},
        {"audio": None, "temperature": None},
    ),
    ({"audio": {"output": {"voice": "echo"}}}, {"audio": {"output": None}, "voice": 7}),
    ({"temperature": 0.5, "instructions": "x"}, {"temperature": None, "instructions": 3}),
    (
        {"input_audio_transcription": {"model": "a"}},
        {"audio": {"input": {"transcription": {"model": "b"}}}},
    ),
    (
        {"audio": {"input": {"transcription": {"model": "b"}}}},
        {"input_audio_transcription": None},
    ),
    ({"input_audio_noise_reduction": {"type": "near_field"}}, {"audio": {"input": {}}}),
    (
        {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}},
        {"input_audio_noise_reduction": {"type": "far_field"}},
    ),
    ({"tools": [{"type": "function", "name": "f"}]}, {"tools": "none"}, {"tool_choice": "auto"}),
    # The two policies vLLM-Omni reads flat and from ``extra_body`` (that one wins in
    # one update); a later update in either spelling replaces the earlier one, a
    # named turn detection sets the overlap policy it implies.
    ({"extra_body": {"overlap_policy": BARGE_IN}}, {"overlap_policy": "listen_only"}),
    ({"overlap_policy": "listen_only", "extra_body": {"overlap_policy": BARGE_IN}},),
    ({"overlap_policy": "listen_only"}, {"extra_body": {"overlap_policy": BARGE_IN}}),
    ({"extra_body": {"overlap_policy": BARGE_IN}}, {"turn_detection": None}),
    ({"turn_detection": VAD}, {"extra_body": {"overlap_policy": "listen_only"}}),
    ({"turn_detection": VAD}, {"overlap_policy": "listen_only"}, {"instructions": "x"}),
    ({"turn_detection": VAD, "extra_body": {"overlap_policy": "listen_only"}}, {"voice": "a"}),
    ({"extra_body": {"overlap_policy": BARGE_IN}}, {"extra_body": {"overlap_policy": 7}}),
    ({"extra_body": {"playback_commit_policy": ACK}}, {"playback_commit_policy": "commit_all"}),
    (
        {"playback_commit_policy": ACK, "extra_body": {"playback_commit_policy": "x"}},
        {"extra_body": {"a": 1}},
    ),
    (
        {"playback_commit_policy": "commit_all_on_done"},
        {"extra_body": {"playback_commit_policy": ACK}},
    ),
]


def updated(sc: Script, *sessions: dict[str, Any]) -> list[dict[str, Any]]:
    """The client's updates, one by one: the sessions the upstream got."""
    sent: list[dict[str, Any]] = []
    for session in sessions:
        out = sc.client({"type": "session.update", "session": session})
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        ups = [e for e in upstream_events(out) if e["type"] == "session.update"]
        sent += [e["session"] for e in ups]
    return sent


def given(out: list[Action]) -> dict[str, Any]:
    """The session a fresh upstream is given."""
    (restore,) = [e for e in upstream_events(out) if e["type"] == "session.update"]
    session: dict[str, Any] = restore["session"]
    return session


def lost(sc: Script) -> dict[str, Any]:
    """The upstream is lost for good: the session the fresh one is given."""
    return given(sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False)))
