"""``session.update`` payloads for the property tests (tests/test_props_session_update.py),
and the emulated sessions they go to.

Strategies for valid and invalid updates (any JSON value where a setting goes), each
payload sent through orjson first, so it is exactly what the client reader can hand
the shim; a turn-based and a relay session to send them to; the errors they answer.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from shim.actions import Action, SendClient
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent
from shim.session import EmulatedSession, ShimSettings

# The same examples every run (CI never flakes); HYPOTHESIS_HUNT=1 explores afresh.
PROPS = settings(
    max_examples=120,
    deadline=None,
    derandomize="HYPOTHESIS_HUNT" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow],
)

PCM16_NAMES = ["audio/pcm", "pcm", "pcm16", "pcm_s16le", "s16le", "PCM16", "Audio/PCM"]
F32_NAMES = ["audio/pcm_f32le", "pcm_f32le", "f32le"]
ALL_NAMES = {n.lower() for n in PCM16_NAMES + F32_NAMES}
ERROR_CODES = {"invalid_value", "unsupported_audio_format", "unsupported_turn_detection"}

# What JSON (as orjson reads it) can carry.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def ints(min_value: int = INT_MIN, max_value: int = INT_MAX) -> st.SearchStrategy[int]:
    return st.integers(min_value=min_value, max_value=max_value)


json_scalars = (
    st.none()
    | st.booleans()
    | ints()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)

rates = st.integers(min_value=8000, max_value=192000)


def make_turn() -> EmulatedSession:
    return TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", ShimSettings())


def make_relay() -> EmulatedSession:
    caps = {"supports_barge_in": False}
    return BargeInRelaySession("sess_0123456789abcdef", "demo", ShimSettings(), caps)


MAKERS = {"turn": make_turn, "relay": make_relay}


@st.composite
def turn_detections(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.booleans()):
        return None
    td: dict[str, Any] = {}
    if draw(st.booleans()):
        td["type"] = draw(st.sampled_from(["server_vad", "semantic_vad"]))
    if draw(st.booleans()):
        td["threshold"] = draw(st.floats(min_value=0.01, max_value=0.99))
    if draw(st.booleans()):
        td["prefix_padding_ms"] = draw(st.integers(0, 10_000))
    if draw(st.booleans()):
        td["silence_duration_ms"] = draw(st.integers(0, 10_000))
    for flag in ("create_response", "interrupt_response"):
        if draw(st.booleans()):
            td[flag] = draw(st.none() | st.booleans())
    if draw(st.booleans()) and td.get("type") != "semantic_vad":  # GA: server_vad only
        td["idle_timeout_ms"] = draw(st.none() | st.integers(5_000, 30_000))
    return td


@st.composite
def valid_updates(draw: st.DrawFn) -> dict[str, Any]:
    """A valid update in one of the two accepted shapes (GA nested or flat)."""
    session: dict[str, Any] = {}
    if draw(st.booleans()):  # GA: session.audio.{input,output}.format
        a_in: dict[str, Any] = {}
        a_out: dict[str, Any] = {}
        if draw(st.booleans()):
            a_in["format"] = {
                "type": draw(st.sampled_from(PCM16_NAMES + F32_NAMES)),
                "rate": draw(rates),
            }
        if draw(st.booleans()):
            a_in["turn_detection"] = draw(turn_detections())
        if draw(st.booleans()):
            a_out["format"] = {"type": draw(st.sampled_from(PCM16_NAMES)), "rate": draw(rates)}
        session["audio"] = {"input": a_in, "output": a_out}
        session["type"] = "realtime"
    else:  # flat, vLLM-Omni style
        if draw(st.booleans()):
            session["input_audio_format"] = draw(st.sampled_from(PCM16_NAMES + F32_NAMES))
        if draw(st.booleans()):
            session["sample_rate_hz"] = draw(rates)
        if draw(st.booleans()):
            session["output_audio_format"] = draw(st.sampled_from(PCM16_NAMES))
        if draw(st.booleans()):
            session["turn_detection"] = draw(turn_detections())
    if draw(st.booleans()):
        session["instructions"] = draw(st.text(max_size=40))
    event: dict[str, Any] = {"type": "session.update", "session": session}
    if draw(st.booleans()):
        event["event_id"] = draw(st.text(min_size=1, max_size=12))
    return event


def _bad_rate() -> st.SearchStrategy[Any]:
    return (
        ints(max_value=7999)
        | ints(min_value=192_001)
        | st.booleans()
        | st.text(max_size=8)
        | st.floats(min_value=8000.01, max_value=191_999.99).filter(lambda f: f != int(f))
        | st.lists(ints(), max_size=2)
    )


def _bad_name() -> st.SearchStrategy[Any]:
    return st.text(max_size=12).filter(lambda s: s.lower() not in ALL_NAMES) | ints()


@st.composite
def invalid_updates(draw: st.DrawFn) -> dict[str, Any]:
    """A valid update with exactly one thing the shim must refuse put into it."""
    event = draw(valid_updates())
    session = event["session"]
    audio = session.setdefault("audio", {})
    a_in = audio.setdefault("input", {})
    which = draw(
        st.sampled_from(
            [
                "session",
                "in_rate",
                "in_name",
                "out_f32",
                "out_rate",
                "td_shape",
                "td_key",
                "td_type",
                "td_threshold",
                "td_ms",
                "td_flag",
            ]
        )
    )
    td: dict[str, Any] = {"type": "server_vad"}
    if which == "session":
        event["session"] = draw(ints() | st.text(max_size=5) | st.lists(ints(), max_size=2))
    elif which == "in_rate":
        a_in["format"] = {"type": "audio/pcm", "rate": draw(_bad_rate())}
    elif which == "in_name":
        a_in["format"] = {"type": draw(_bad_name()), "rate": 24000}
    elif which == "out_f32":
        audio["output"] = {"format": {"type": draw(st.sampled_from(F32_NAMES)), "rate": 24000}}
    elif which == "out_rate":
        audio["output"] = {"format": {"type": "audio/pcm", "rate": draw(_bad_rate())}}
    elif which == "td_shape":
        a_in["turn_detection"] = draw(ints() | st.text(max_size=5) | st.lists(st.none()))
    else:
        if which == "td_key":
            key = draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in KNOWN_TD_KEYS))
            td[key] = draw(json_scalars)
        elif which == "td_type":
            td["type"] = draw(json_values.filter(lambda v: v not in ("server_vad", "semantic_vad")))
        elif which == "td_threshold":
            td["threshold"] = draw(
                st.floats(min_value=1.0, max_value=1e9)
                | st.floats(min_value=-1e9, max_value=0.0)
                | st.booleans()
                | st.text(max_size=4)
            )
        elif which == "td_ms":
            key = draw(st.sampled_from(["prefix_padding_ms", "silence_duration_ms"]))
            td[key] = draw(ints(min_value=10_001) | ints(max_value=-1))
        else:
            flag = draw(st.sampled_from(["create_response", "interrupt_response"]))
            td[flag] = draw(ints() | st.text(max_size=4) | st.just([]))
        a_in["turn_detection"] = td
    return event


KNOWN_TD_KEYS = {
    "type",
    "threshold",
    "prefix_padding_ms",
    "silence_duration_ms",
    "create_response",
    "interrupt_response",
    "idle_timeout_ms",
    "min_speech_duration_ms",
    "eagerness",
}


def send(session: EmulatedSession, event: dict[str, Any]) -> list[Action]:
    raw = orjson.dumps(event).decode()
    return session.handle(ClientEvent(orjson.loads(raw), raw, 0.0))


def errors(actions: list[Action]) -> list[dict[str, Any]]:
    return [
        a.event["error"]
        for a in actions
        if isinstance(a, SendClient) and a.event.get("type") == "error"
    ]
