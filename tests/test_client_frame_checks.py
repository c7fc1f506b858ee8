"""A client frame's checks, as cut down for the relay's path, decide what the full ones did.

``parse_client_frame`` (``proxy/client_frames.py``) skips its look at the parsed values
when the text shows no container after the outer object's brace, and the audio
allowance's ``InputClock.cost`` (``proxy/client_limits.py``) reads an append's size
without a call to ``audio_bytes``. The references below are the checks as they were
written before, in full: every input, crafted or generated, gets the same event or the
same error (code and message) from both, under the default limits and tiny ones.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.client_frames import BadFrame, ClientFrame, parse_client_frame
from proxy.client_limits import _NAMES_FORMAT, AUDIO_BYTES_PER_S, InputClock, audio_bytes
from proxy.json_depth import holds_more_values_than, nests_deeper_than
from shim.audio import PCM16, PCM_F32, PCMU, AudioFormat
from shim.native_client import append_format
from tests.client_frame_inputs import AUDIO, CRAFTED, LIMITS, PROPS, VALUES


def _reference_nested(event: object) -> bool:
    if not isinstance(event, dict):
        return True
    return any(isinstance(value, (dict, list)) for value in event.values())


def reference_parse(raw: str, max_depth: int, max_values: int) -> ClientFrame | BadFrame:
    """The parse with a look at the values for every event (no look at the text first)."""
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return BadFrame("invalid_event", f"frame is not valid JSON: {exc}")
    if _reference_nested(event) and nests_deeper_than(raw, event, max_depth):
        return BadFrame("invalid_event", f"event nested too deeply (over {max_depth} levels)")
    if not isinstance(event, dict):
        return BadFrame("invalid_event", "an event must be a JSON object")
    if _reference_nested(event) and holds_more_values_than(raw, event, max_values):
        return BadFrame("invalid_event", f"event holds too many JSON values (over {max_values})")
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return BadFrame("invalid_event", "an event needs a string 'type'")
    return ClientFrame(raw, event)


def same(raw: str) -> None:
    for max_depth, max_values in LIMITS:
        assert parse_client_frame(raw, max_depth, max_values) == reference_parse(
            raw, max_depth, max_values
        ), (raw[:80], max_depth, max_values)


def test_crafted_frames_get_what_the_full_checks_gave() -> None:
    for raw in CRAFTED:
        same(raw)


@PROPS
@given(value=VALUES, pad=st.sampled_from(["", " ", "\n\t", "\r\n  "]))
def test_any_json_value_gets_what_the_full_checks_gave(value: Any, pad: str) -> None:
    raw = orjson.dumps(value, option=orjson.OPT_INDENT_2 if pad else 0).decode()
    same(pad + raw + pad)
    if isinstance(value, dict):  # the same value, given a type
        same(orjson.dumps({"type": "t", **value}).decode())


@PROPS
@given(text=st.text(alphabet=st.sampled_from('{}[]",: \\tx1e.-'), max_size=40))
def test_any_text_of_json_punctuation_gets_what_the_full_checks_gave(text: str) -> None:
    same(text)


def reference_cost(clock: InputClock, event: dict[str, Any]) -> int:
    """``InputClock.cost`` with the append's size from ``audio_bytes``."""
    n_bytes = audio_bytes(event)
    if n_bytes <= 0:
        return 0
    fmt = clock.input_format
    if not _NAMES_FORMAT.isdisjoint(event):
        try:
            fmt = append_format(event, fmt, clock.native)
        except Exception:
            return n_bytes
    per_s = fmt.rate_hz * fmt.bytes_per_sample
    return -(-n_bytes * AUDIO_BYTES_PER_S // per_s)


AUDIOS = ["", "=", "==", "===", "A", "A=", "AA", "AA==", "AAA=", "AAAA", "AB=C", "====", AUDIO]


FORMATS = [None, AudioFormat(PCMU, 8000), AudioFormat(PCM16, 16000), AudioFormat(PCM_F32, 48000)]


@pytest.mark.parametrize("told", FORMATS)
def test_an_appends_cost_is_what_its_decoded_size_gave(told: AudioFormat | None) -> None:
    for native in (False, True):
        clock = InputClock(native)
        assert clock.cost({"type": "input_audio_buffer.append", "audio": AUDIO}) > 0
        if told is not None:  # the session told another format after a first append
            clock.input_format = told
        for audio in [*AUDIOS, *(a + "AAAA" * 7 for a in AUDIOS)]:
            for extra in ({}, {"format": "g711_ulaw"}, {"sample_rate_hz": 8000}, {"format": 5}):
                event = {"type": "input_audio_buffer.append", "audio": audio, **extra}
                assert clock.cost(event) == reference_cost(clock, event), (audio, extra)
                assert audio_bytes(event) == 0 or clock.cost(event) > 0
        for event in (
            {"type": "input_audio_buffer.commit", "audio": AUDIO},
            {"type": "input_audio_buffer.append", "audio": 5},
            {"type": "input_audio_buffer.append", "audio": None},
            {"type": "input_audio_buffer.append"},
            {"audio": AUDIO},
        ):
            assert clock.cost(event) == 0 == audio_bytes(event)
