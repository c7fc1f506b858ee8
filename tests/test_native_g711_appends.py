"""A native client's appends read at the format and rate vLLM-Omni reads them at
(``protocol/realtime/audio_input.py``, ``decode_audio_append``), in both emulated
sessions by script: untagged G.711 at the session's rate, an append's own format and
rate keys, an untyped format object refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from shim.dialects.duplex_relay import BargeInRelaySession
from tests.native_g711_sessions import b64, native_sessions
from tests.shim_script import Script, client_events, upstream_events

pytestmark = pytest.mark.timeout(120)


def test_untagged_g711_appends_are_read_at_the_sessions_rate() -> None:
    """An append naming G.711 but no rate is at the session's rate, as vLLM-Omni reads
    it, not 8 kHz: 16 kHz μ-law of 200 ms is 3200 samples on the 16 kHz timeline."""
    for s in native_sessions():
        sc = Script(s)
        before = s.history.end
        quiet = b64(b"\xff" * 3200)  # μ-law silence, 200 ms at 16 kHz
        out = sc.client({"type": "input_audio_buffer.append", "audio": quiet, "format": "ulaw"})
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert 3200 - 40 <= s.history.end - before <= 3200
        assert not isinstance(s, BargeInRelaySession) or upstream_events(out)


def test_an_appends_format_is_read_as_the_wheels_decode_audio_append_reads_it() -> None:
    """Any spelling vLLM-Omni reads is taken (``audio/pcm16``); an object with no
    ``type`` is refused, not read as the session's format."""
    for s in native_sessions():
        sc = Script(s)
        pcm = b64(bytes(640))  # 20 ms at 16 kHz
        before = s.history.end
        out = sc.client(
            {"type": "input_audio_buffer.append", "audio": pcm, "format": "audio/pcm16"}
        )
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert s.history.end > before
        before = s.history.end
        untyped = {"type": "input_audio_buffer.append", "audio": pcm, "format": {"rate": 24000}}
        out = sc.client(untyped)
        assert s.history.end == before  # not taken
        # Refused by the turn-based session itself; a relay leaves it to its upstream.
        errors = [e["error"]["code"] for e in client_events(out) if e["type"] == "error"]
        assert errors == (
            [] if isinstance(s, BargeInRelaySession) else ["unsupported_audio_format"]
        )


PCM_200MS_16K = b64(b"\x00\x01" * 3200)
# An append's own keys as vLLM-Omni reads them (``decode_audio_append``), and how many
# samples 3200 of them (or 6400 bytes of PCM16) make on the 16 kHz timeline.
APPENDS = [
    ({"sample_rate": 8000}, 6400),  # PCM16 at 8 kHz: 400 ms
    ({"sample_rate_hz": 0, "sample_rate": 32000}, 1600),
    ({"sample_rate_hz": 0}, 3200),  # no rate: the session's
    ({"sample_rate_hz": "fast"}, 3200),  # no number: 16 kHz, as its runner takes it
    ({"format": "", "input_audio_format": "pcm16", "sample_rate_hz": 8000}, 6400),
    ({"format": {"type": "audio/pcm16", "rate": 32000}}, 1600),
    ({"format": {"type": "pcm16", "rate": 32000}, "sample_rate_hz": 8000}, 6400),
]


@pytest.mark.parametrize(("keys", "heard"), APPENDS)
def test_an_append_names_its_format_and_rate_as_vllm_omni_reads_them(
    keys: dict[str, Any], heard: int
) -> None:
    """In both emulated modes a native client's append is heard at the format and rate
    vLLM-Omni reads it at, and refused by neither."""
    for s in native_sessions():
        sc = Script(s)
        before = s.history.end
        out = sc.client({"type": "input_audio_buffer.append", "audio": PCM_200MS_16K, **keys})
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert heard - 40 <= s.history.end - before <= heard, type(s).__name__
