"""What asks for something, per GA option and session field, by script:
``shim/dialects/ga_generation_options.py`` (each option's own empty values; nothing
empty left to go upstream) and ``shim/session_options.py`` (a session's ``type``,
read from GA clients only)."""

from __future__ import annotations

from typing import Any

import pytest

from shim.audio_formats import SessionConfigError
from shim.dialects import ga_generation_options, turn_limits
from shim.session_config import NATIVE_CONFIG, ClientSessionConfig, apply_session_update
from shim.vad_gate import VadParams


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"instructions": "auto"}, "response.instructions"),
        ({"tool_choice": "required"}, "response.tool_choice"),
        ({"temperature": 0.7}, "response.temperature"),
        ({"audio": {"output": {"voice": "marin"}}}, "response.audio.output.voice"),
    ],
)
def test_an_option_asking_for_something_is_named(options: dict[str, Any], param: str) -> None:
    assert ga_generation_options.screened(options)[0] == param


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        ({"tool_choice": "none", "tools": []}, {}),
        ({"instructions": "", "max_output_tokens": "inf"}, {}),
        ({"audio": {"output": {"voice": None}}}, {}),
        ({"audio": {"output": {"voice": None, "speed": 1}}}, {"audio": {"output": {"speed": 1}}}),
        ({"audio": {"output": {"voice": None}, "x": 1}}, {"audio": {"x": 1}}),
    ],
)
def test_an_option_asking_for_nothing_is_left_out_with_nothing_empty(
    options: dict[str, Any], kept: dict[str, Any]
) -> None:
    assert ga_generation_options.screened(options) == (None, kept)


def update(cfg: ClientSessionConfig, session: dict[str, Any]) -> ClientSessionConfig:
    return apply_session_update(cfg, {"type": "session.update", "session": session}, VadParams())


def test_a_native_clients_session_type_is_not_read() -> None:
    assert update(NATIVE_CONFIG, {"type": "transcription"}) == NATIVE_CONFIG


@pytest.mark.parametrize(
    ("kind", "code"),
    [("transcription", "unsupported_by_upstream"), (5, "invalid_value"), ("x", "invalid_value")],
)
def test_a_ga_session_type_other_than_realtime_is_refused(kind: Any, code: str) -> None:
    with pytest.raises(SessionConfigError) as refused:
        update(ClientSessionConfig(), {"type": kind})
    assert (refused.value.code, refused.value.param) == (code, "session.type")
    assert update(ClientSessionConfig(), {"type": "realtime"}) == ClientSessionConfig()


@pytest.mark.parametrize(
    ("key", "value", "asks"),
    [
        ("speed", None, False),
        ("speed", 1, False),
        ("speed", 1.0, False),
        ("speed", True, True),
        ("speed", 1.2, True),
        ("speed", "1", True),
        ("include", None, False),
        ("include", [], False),
        ("include", "", True),
        ("include", ["item.input_audio_transcription.logprobs"], True),
        ("max_output_tokens", "inf", False),
        ("max_output_tokens", 100, True),
    ],
)
def test_a_generation_setting_asks_over_a_turn_based_upstream_as_an_option_does(
    key: str, value: Any, asks: bool
) -> None:
    """``turn_limits`` refuses the settings that ask for something by the options' rule
    (LiveKit states speed 1.0, no token limit and no ``include`` in every update)."""
    assert ga_generation_options.asks(key, value) is asks
    flat = turn_limits.strip_session_fields({"type": "session.update", "session": {key: value}})
    assert flat[1] == ([f"session.{key}"] if asks else [])
    if key == "speed":
        nested = {"type": "session.update", "session": {"audio": {"output": {key: value}}}}
        said = turn_limits.strip_session_fields(nested)[1]
        assert said == (["session.audio.output.speed"] if asks else [])
