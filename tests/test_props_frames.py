"""Properties of what arrives from outside: client frames and the upstream's session.created.

* Client frames (``proxy/client_io.py`` ``parse_client_frame``, the one parser in front of
  the shim): any text is a parsed event or a coded error, never an exception; a parsed
  event then goes through both emulated sessions' ``handle`` without raising, and any
  error it answers carries a code.
* Classification (``shim/capabilities.py``): any ``session.created`` shape decides one
  mode, the same one every time, without raising.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.client_frames import BadFrame, ClientFrame, parse_client_frame
from shim.actions import Action, SendClient
from shim.audio import b64encode
from shim.capabilities import EMULATED_FLAGS, classify, proxy_capabilities, upstream_kind
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent
from shim.session import EmulatedSession, ShimSettings

# The same examples every run (CI never flakes); HYPOTHESIS_HUNT=1 explores afresh.
PROPS = settings(
    max_examples=150,
    deadline=None,
    derandomize="HYPOTHESIS_HUNT" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow],
)

INT = st.integers(min_value=-(2**63), max_value=2**63 - 1)
json_scalars = (
    st.none()
    | st.booleans()
    | INT
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=16,
)

CLIENT_TYPES = [
    "session.update",
    "input_audio_buffer.append",
    "input_audio_buffer.commit",
    "input_audio_buffer.clear",
    "response.create",
    "response.cancel",
    "conversation.item.truncate",
    "conversation.item.retrieve",
    "conversation.item.create",
    "playback.ack",
    "session.event_ack",
    "output_audio_buffer.clear",
]
FIELDS = [
    "session",
    "audio",
    "delta",
    "item_id",
    "response_id",
    "audio_end_ms",
    "played_ms",
    "content_index",
    "event_id",
    "item",
]


def check_parsed(raw: str) -> ClientFrame | BadFrame:
    parsed = parse_client_frame(raw)
    if isinstance(parsed, BadFrame):
        assert parsed.code == "invalid_event"
        assert isinstance(parsed.message, str) and parsed.message
    else:
        assert isinstance(parsed.event, dict)
        assert isinstance(parsed.event["type"], str) and parsed.event["type"]
        assert parsed.raw == raw
    return parsed


@PROPS
@given(text=st.text(max_size=200))
def test_any_text_is_an_event_or_a_coded_error(text: str) -> None:
    check_parsed(text)


@PROPS
@given(
    text=st.text(
        alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | st.characters(),
        max_size=50,
    )
)
def test_text_with_lone_surrogates_is_an_event_or_a_coded_error(text: str) -> None:
    check_parsed('{"type": "x", "v": "' + text + '"}')
    check_parsed(text)


@PROPS
@given(data=st.binary(max_size=200))
def test_any_bytes_read_as_text_are_an_event_or_a_coded_error(data: bytes) -> None:
    check_parsed(data.decode("utf-8", errors="replace"))
    check_parsed(data.decode("latin-1"))


@PROPS
@given(value=json_values)
def test_any_json_value_parses_iff_it_is_an_object_with_a_type(value: Any) -> None:
    raw = orjson.dumps(value).decode()
    parsed = check_parsed(raw)
    is_event = isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"]
    assert isinstance(parsed, ClientFrame) == bool(is_event)
    if isinstance(parsed, ClientFrame):
        assert parsed.event == orjson.loads(raw)


@pytest.mark.parametrize("depth", [10, 1000, 5000, 100_000])
@pytest.mark.parametrize("shape", ["list", "object"])
def test_deeply_nested_frames_are_a_coded_error_or_an_event(depth: int, shape: str) -> None:
    if shape == "list":
        inner = "[" * depth + "]" * depth
    else:
        inner = '{"a":' * depth + "1" + "}" * depth
    check_parsed('{"type": "conversation.item.create", "item": ' + inner + "}")
    check_parsed(inner)


def test_huge_frames_are_parsed_or_refused_without_raising() -> None:
    big = "x" * 4_000_000
    assert isinstance(check_parsed(orjson.dumps({"type": "t", "v": big}).decode()), ClientFrame)
    assert isinstance(check_parsed('{"type": "t", "v": "' + big), BadFrame)
    assert isinstance(check_parsed(big), BadFrame)


# --- parsed frames through the sessions --------------------------------------------------


def sessions() -> list[EmulatedSession]:
    return [
        TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", ShimSettings()),
        BargeInRelaySession(
            "sess_0123456789abcdef", "demo", ShimSettings(), {"supports_barge_in": False}
        ),
    ]


audio_values = (
    st.binary(max_size=64).map(b64encode)
    | st.text(max_size=12)
    | json_scalars
    | st.just(b64encode(b"\x00\x00\x80\x7f" * 4))  # f32 infinity, as PCM16 it is fine
)


@st.composite
def client_events(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {"type": draw(st.sampled_from(CLIENT_TYPES) | st.text(min_size=1))}
    for key in draw(st.lists(st.sampled_from(FIELDS), max_size=4, unique=True)):
        event[key] = draw(audio_values if key in ("audio", "delta") else json_values)
    return event


def coded_errors(actions: list[Action]) -> None:
    for a in actions:
        if isinstance(a, SendClient) and a.event.get("type") == "error":
            err = a.event["error"]
            assert isinstance(err["code"], str) and err["code"]
            assert err["code"] != "internal_error", err["message"]  # a failure inside
            assert isinstance(err["message"], str)


@PROPS
@given(events=st.lists(client_events(), min_size=1, max_size=6))
def test_parsed_client_events_never_make_handle_raise(events: list[dict[str, Any]]) -> None:
    for session in sessions():
        for now, event in enumerate(events):
            raw = orjson.dumps(event).decode()
            parsed = check_parsed(raw)
            assert isinstance(parsed, ClientFrame)
            coded_errors(session.handle(ClientEvent(parsed.event, raw, float(now))))


# --- classification ------------------------------------------------------------------------

FORCED = ["auto", "passthrough", "barge_in_emulated", "duplex_emulated"]
capabilities = (
    st.fixed_dictionaries(
        {},
        optional={
            "supports_barge_in": st.booleans() | json_scalars,
            "supports_audio_truncate": st.booleans() | json_scalars,
            "supports_session_resume": st.booleans() | json_scalars,
            "implementation_level": st.none() | st.text(max_size=20) | json_values,
            "target_barge_in_latency_ms": json_scalars,
        },
    )
    | json_values
)


@st.composite
def session_created(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3))
    event["type"] = "session.created"
    shape = draw(st.sampled_from(["flat", "session", "session_caps", "odd"]))
    if shape == "session":
        event["session"] = draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3))
    elif shape == "session_caps":
        session = draw(st.dictionaries(st.text(max_size=10), json_values, max_size=3))
        session["capabilities"] = draw(capabilities)
        event["session"] = session
    elif shape == "odd":
        event["session"] = draw(json_scalars | st.lists(json_values, max_size=3))
    else:
        event.pop("session", None)
    return event


@PROPS
@given(
    created=session_created(),
    forced=st.sampled_from(FORCED),
    refused=st.booleans(),
    resume=st.booleans(),
    target=st.none() | st.integers(0, 5000),
)
def test_classification_decides_one_mode_deterministically(
    created: dict[str, Any], forced: str, refused: bool, resume: bool, target: int | None
) -> None:
    # As the upstream reader sees it: what came over the wire.
    created = orjson.loads(orjson.dumps(created))
    cls = classify(created, forced=forced, duplex_refused=refused)
    again = classify(copy.deepcopy(created), forced=forced, duplex_refused=refused)
    assert cls == again
    assert cls.mode in ("passthrough", "barge_in_emulated", "duplex_emulated")
    assert cls.reasons and all(isinstance(r, str) for r in cls.reasons)
    session = created.get("session")
    assert cls.kind == upstream_kind(created) == ("duplex" if isinstance(session, dict) else "turn")
    caps = session.get("capabilities") if isinstance(session, dict) else None
    barge_in = isinstance(caps, dict) and caps.get("supports_barge_in") is True
    if cls.kind == "turn":
        assert cls.mode == "duplex_emulated", "a turn-based dialect is never relayed as duplex"
    elif forced != "auto":
        assert cls.mode == forced
    else:
        assert cls.mode == ("passthrough" if barge_in else "barge_in_emulated")
    shown = proxy_capabilities(cls, resume_available=resume, barge_in_target_ms=target)
    orjson.dumps(shown)  # what the client is sent must serialise
    assert shown["proxy"]["mode"] == cls.mode
    if cls.mode != "passthrough":
        assert all(shown[f] is True for f in EMULATED_FLAGS if f != "supports_session_resume")
        assert shown["supports_session_resume"] is resume
    elif not resume:
        assert shown.get("supports_session_resume") is not True


@PROPS
@given(event=st.dictionaries(st.text(max_size=10), json_values, max_size=4))
def test_anything_but_session_created_is_refused_plainly(event: dict[str, Any]) -> None:
    if event.get("type") == "session.created":
        return
    assert upstream_kind(event) is None
    with pytest.raises(ValueError, match=r"not a session\.created"):
        classify(event)
