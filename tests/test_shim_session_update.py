"""session.update: every number is checked; a refused update changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.native_turns import turn_refusal
from shim.session import EmulatedSession, ShimSettings
from tests.shim_script import Script, client_events, upstream_events

SETTINGS = ShimSettings(echo_suppression=False)


def td(**fields: Any) -> dict[str, Any]:
    turn = {"type": "server_vad", **fields}
    return {"type": "session.update", "session": {"audio": {"input": {"turn_detection": turn}}}}


def rate(where: str, value: Any) -> dict[str, Any]:
    fmt = {"type": "audio/pcm", "rate": value}
    return {"type": "session.update", "session": {"audio": {where: {"format": fmt}}}}


BAD = [
    (td(threshold=7), "turn_detection.threshold"),
    (td(threshold=0), "turn_detection.threshold"),
    (td(threshold=float("nan")), "turn_detection.threshold"),
    (td(threshold="high"), "turn_detection.threshold"),
    (td(prefix_padding_ms=-1), "turn_detection.prefix_padding_ms"),
    (td(prefix_padding_ms=float("inf")), "turn_detection.prefix_padding_ms"),
    (td(silence_duration_ms=10**9), "turn_detection.silence_duration_ms"),
    (td(silence_duration_ms=250.5), "turn_detection.silence_duration_ms"),
    (td(min_speech_duration_ms=10**9), "turn_detection.min_speech_duration_ms"),
    (td(min_speech_duration_ms=-(10**9)), "turn_detection.min_speech_duration_ms"),
    (td(min_speech_duration_ms="100"), "turn_detection.min_speech_duration_ms"),
    (td(idle_timeout_ms=-5), "turn_detection.idle_timeout_ms"),
    (td(idle_timeout_ms=True), "turn_detection.idle_timeout_ms"),
    (td(create_response=1), "turn_detection.create_response"),
    (rate("input", 0), "audio.input.format"),
    (rate("input", 10**9), "audio.input.format"),
    (rate("input", float("inf")), "audio.input.format"),
    (rate("output", 44100.5), "audio.output.format"),
    ({"type": "session.update", "sample_rate_hz": -16000}, "audio.input.format"),
]


WHEEL_TAKES = [
    rate("input", 0),
    rate("output", 44100.5),
    {"type": "session.update", "sample_rate_hz": -16000},
]


def sessions() -> list[EmulatedSession]:
    return [
        TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", SETTINGS),
        BargeInRelaySession("sess_0123456789abcdef", "m", SETTINGS, {}),
    ]


@pytest.mark.parametrize("index", range(2), ids=["duplex_emulated", "barge_in_emulated"])
@pytest.mark.parametrize(("event", "field"), BAD, ids=[f for _, f in BAD])
def test_a_bad_number_is_refused_naming_its_field_and_changes_nothing(
    index: int, event: dict[str, Any], field: str
) -> None:
    sc = Script(sessions()[index])
    before = sc.s.config
    out = sc.client({**event, "event_id": "evt_9"})
    if index == 1 and event in WHEEL_TAKES:
        # The relay's native client: vLLM-Omni ignores a rate that is not positive and
        # truncates one that is not whole (its ``protocol/realtime/session.py``).
        assert not client_events(out) and upstream_events(out)
        return
    if index == 1 and turn_refusal(event) is not None:
        # Turn detection vLLM-Omni refuses goes to it unapplied, for it to refuse in its
        # own words (``shim/native_turns.py``).
        assert not client_events(out) and upstream_events(out)
        assert sc.s.config == before
        return
    (err,) = client_events(out)
    assert err["type"] == "error" and err["error"]["code"] == "invalid_value"
    assert err["error"]["param"] == field and field in err["error"]["message"]
    assert err["error"]["event_id"] == "evt_9"
    assert not upstream_events(out), "nothing goes upstream"
    assert sc.s.config == before


def test_good_numbers_are_taken() -> None:
    sc = Script(sessions()[0])
    out = sc.client(
        td(
            threshold=0.7,
            prefix_padding_ms=100.0,
            silence_duration_ms=0,
            min_speech_duration_ms=200,
            idle_timeout_ms=None,
        )
    )
    assert client_events(out)[0]["type"] == "session.updated"
    vad = sc.s.config.turn.vad
    assert vad is not None
    assert (vad.threshold, vad.prefix_padding_ms, vad.silence_duration_ms) == (0.7, 100, 0)
    assert vad.min_speech_ms == 200
