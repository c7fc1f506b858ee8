"""GA ``session.update`` fields beyond formats and turn detection, in both emulated modes,
by script: each is applied as far as the mode can, or refused with a coded error, never
accepted and then ignored (``shim/session_options.py``). Every event the client gets
is checked against the ``openai`` SDK's GA types."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from shim.actions import Action
from shim.vad_gate import VadParams
from tests.shim_edge_scripts import errors, turn_based
from tests.shim_ga_relay_script import make
from tests.shim_script import Script, client_events, upstream_events

GA: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
MAKERS = [turn_based, make]
TRANSCRIBE = {"model": "gpt-4o-mini-transcribe"}
NEAR = {"type": "near_field"}


def ga(actions: list[Action]) -> list[dict[str, Any]]:
    events = client_events(actions)
    for event in events:
        GA.validate_python({"event_id": "event_1", **event})  # the edge adds the id
    return events


def update(sc: Script, **session: Any) -> list[Action]:
    return sc.client({"type": "session.update", "session": {"type": "realtime", **session}})


def updated(events: list[dict[str, Any]]) -> dict[str, Any]:
    (ev,) = [e for e in events if e["type"] == "session.updated"]
    return dict(ev["session"])


@pytest.mark.parametrize("maker", MAKERS)
def test_a_text_only_session_is_refused_and_nothing_changes(maker: Any) -> None:
    sc = maker()
    out = update(sc, output_modalities=["text"], instructions="x" if maker is make else None)
    (err,) = errors(out)
    assert (err["code"], err["param"]) == ("unsupported_by_upstream", "session.output_modalities")
    assert "session.updated" not in [e["type"] for e in ga(out)]
    assert updated(ga(update(sc, output_modalities=["audio"])))["output_modalities"] == ["audio"]


def test_semantic_vad_is_told_as_set_and_its_eagerness_sets_when_a_turn_ends() -> None:
    ended = {}
    for eagerness in ("high", "low"):
        sc = turn_based()
        td = {"type": "semantic_vad", "eagerness": eagerness}
        told = updated(ga(update(sc, audio={"input": {"turn_detection": td}})))
        turn = told["audio"]["input"]["turn_detection"]
        assert (turn["type"], turn["eagerness"]) == ("semantic_vad", eagerness)
        # Speech, then 480 ms of silence: past high's end-of-turn silence, short of low's.
        out = ga(sc.speak([0.05] * 5 + [0.9] * 20 + [0.05] * 15))
        ended[eagerness] = "input_audio_buffer.speech_stopped" in [e["type"] for e in out]
    assert ended == {"high": True, "low": False}


def test_a_bad_eagerness_is_an_invalid_value() -> None:
    sc = turn_based()
    for eagerness in ("eager", ["high"], {"level": "high"}, 3):
        td = {"type": "semantic_vad", "eagerness": eagerness}
        (err,) = errors(update(sc, audio={"input": {"turn_detection": td}}))
        assert (err["code"], err["param"]) == ("invalid_value", "turn_detection.eagerness")


def test_over_a_duplex_upstream_transcription_and_noise_reduction_go_up_and_are_told() -> None:
    sc = make()
    out = update(sc, audio={"input": {"transcription": TRANSCRIBE, "noise_reduction": NEAR}})
    told = updated(ga(out))["audio"]["input"]
    assert (told["transcription"], told["noise_reduction"]) == (TRANSCRIBE, NEAR)
    (sent,) = upstream_events(out)
    assert sent["session"]["audio"]["input"]["transcription"] == TRANSCRIBE
    told = updated(ga(update(sc, audio={"input": {"noise_reduction": None}})))["audio"]["input"]
    assert (told["transcription"], told["noise_reduction"]) == (TRANSCRIBE, None)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("transcription", {"model": 5}),
        ("transcription", {"language": ["en"]}),
        ("noise_reduction", {"type": "far"}),
        ("noise_reduction", 3),
    ],
)
def test_a_shape_ga_does_not_know_is_an_invalid_value_and_is_not_told(
    name: str, value: Any
) -> None:
    sc = make()
    out = update(sc, audio={"input": {name: value}})
    (err,) = errors(out)
    assert (err["code"], err["param"]) == ("invalid_value", f"session.audio.input.{name}")
    assert "session.updated" not in [e["type"] for e in ga(out)]
    fine = {"model": "whisper-1", "language": "en"} if name == "transcription" else NEAR
    told = updated(ga(update(sc, audio={"input": {name: fine}})))["audio"]["input"]
    assert told[name] == fine


def test_over_a_turn_based_upstream_they_are_refused_field_by_field_and_the_rest_applies() -> None:
    sc = turn_based()
    pcmu = {"type": "audio/pcmu"}
    a_in = {"transcription": TRANSCRIBE, "noise_reduction": NEAR, "format": pcmu}
    out = update(sc, audio={"input": a_in})
    params = sorted(e["param"] for e in errors(out))
    assert params == ["session.audio.input.noise_reduction", "session.audio.input.transcription"]
    told = updated(ga(out))["audio"]["input"]
    assert (told["transcription"], told["noise_reduction"]) == (None, None)
    assert told["format"] == pcmu, "the rest of the update applies"
    flat = sc.client({"type": "session.update", "input_audio_transcription": TRANSCRIBE})
    assert [e["param"] for e in errors(flat)] == ["input_audio_transcription"]


def test_over_a_duplex_upstream_the_eagerness_sets_the_upstreams_end_of_turn_silence() -> None:
    silences = {}
    for eagerness in ("high", "auto", "low"):
        sc = make()
        td = {"type": "semantic_vad", "eagerness": eagerness}
        out = update(sc, audio={"input": {"turn_detection": td}})
        turn = updated(ga(out))["audio"]["input"]["turn_detection"]
        assert (turn["type"], turn["eagerness"]) == ("semantic_vad", eagerness)
        (sent,) = upstream_events(out)
        # Named upstream only when it changes (shim/dialects/ga_session_update.py): left
        # out, the upstream runs on with the server VAD it opened with, [vad]'s silence.
        opened = {"silence_duration_ms": VadParams().silence_duration_ms}
        silences[eagerness] = sent["session"].get("turn_detection", opened)["silence_duration_ms"]
    assert silences == {"high": 250, "auto": 500, "low": 1000}
