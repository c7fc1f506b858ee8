"""A native client's refusals in vLLM-Omni's own words (``shim/native_client.py``),
and the strict stand-in saying the same (``proxy/reference/duplex_input.py``): the
wheel's ``protocol/realtime/audio_input.py`` (no audio) and
``engine/duplex/session/runner.py`` (PCM16 it cannot decode)."""

from __future__ import annotations

import base64

import pybase64
import pytest

from proxy.reference.duplex_formats import InputDefaults
from proxy.reference.duplex_input import AppendDecoder, CommandError
from shim import wire
from shim.native_client import native_error

NO_AUDIO = ("bad_event", "input_audio_buffer.append requires audio and/or video_frames")
ODD_PCM16 = ("bad_audio", "input_audio_buffer.append pcm16 audio could not be decoded")


@pytest.mark.parametrize(
    ("code", "message", "theirs"),
    [
        ("invalid_audio", "3 bytes is not a whole number of pcm16 samples", ODD_PCM16),
        ("invalid_audio", "input_audio_buffer.append carries no audio", NO_AUDIO),
        ("invalid_event", "input_audio_buffer.append needs a base64 'audio' string", NO_AUDIO),
        # An unknown item: GA names the request in the code, vLLM-Omni does not.
        (
            *wire.unknown_item("conversation.item.retrieve", "item_x"),
            ("item_not_found", "Conversation item not found: item_x"),
        ),
        (
            *wire.unknown_item("conversation.item.truncate", "item_x"),
            ("item_not_found", "Conversation item not found: item_x"),
        ),
        # An id with quotes in it is named whole.
        (
            *wire.unknown_item("conversation.item.retrieve", "it'em 'x'"),
            ("item_not_found", "Conversation item not found: it'em 'x'"),
        ),
        (
            *wire.unknown_item("conversation.item.retrieve", ""),
            ("item_not_found", "Conversation item not found: "),
        ),
        # No words of vLLM-Omni's for float audio: the proxy's own stand.
        ("invalid_audio", "pcm_f32le audio holds NaN or infinity", None),
    ],
)
def test_the_proxys_refusals_in_the_wheels_words(
    code: str, message: str, theirs: tuple[str, str] | None
) -> None:
    err = native_error(wire.error(code, message))["error"]
    assert (err["code"], err["message"]) == (theirs or (code, message))


@pytest.mark.parametrize(
    ("audio", "theirs"),
    [(pybase64.b64encode(b"\x00\x01\x02").decode(), ODD_PCM16), ("", NO_AUDIO)],
)
def test_the_stand_in_says_the_same(audio: str, theirs: tuple[str, str]) -> None:
    event = {"type": "input_audio_buffer.append", "audio": audio, "format": "pcm16"}
    with pytest.raises(CommandError) as refused:
        AppendDecoder().decode(event, InputDefaults())
    assert (refused.value.code, str(refused.value)) == theirs


PCM = bytes(range(256)) * 30  # 3840 samples


@pytest.mark.parametrize(
    ("audio", "rate", "ms"),
    [
        (pybase64.b64encode(PCM).decode() + "\n", 24000, 160.0),
        (base64.encodebytes(PCM).decode(), 24000, 160.0),  # MIME line breaks
        (pybase64.b64encode(PCM).decode(), "24000", 240.0),  # no number: 16 kHz
    ],
)
def test_the_stand_in_reads_pcm16_as_leniently_as_vllm_omni(
    audio: str, rate: object, ms: float
) -> None:
    event = {"type": "input_audio_buffer.append", "audio": audio, "format": "pcm16"}
    decoded = AppendDecoder().decode(event | {"sample_rate_hz": rate}, InputDefaults())
    assert decoded.duration_ms == ms
