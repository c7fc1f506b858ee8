"""A native client's G.711 at the rates vLLM-Omni reads it, and its session's rate
found where vLLM-Omni looks first, checked against the wheel's own reader.

vLLM-Omni 0.30.0 keeps a session's input rate apart from its format (16 kHz unless
declared) and reads G.711 at that rate like PCM16 (``protocol/realtime/session.py``,
``apply_realtime_session_defaults``). It reads the rate from the flat
``sample_rate_hz`` / ``sample_rate`` first, then ``audio.input``'s, then the format's
own ``rate``, and tells the format back as ``{"type": "audio/g711_ulaw", "rate":
16000}``. The proxy reads a native client's session the same way, in every emulated
mode, through a resume too; a GA client's G.711 stays GA's 8 kHz. Appends:
tests/test_native_g711_appends.py; on real speech: tests/test_native_g711_speech.py.
"""

from __future__ import annotations

import types

import pytest

from shim.audio import PCM16, PCMA, PCMU, AudioFormat
from shim.dialects.ga_relay import GaRelaySession
from shim.dialects.turn_based import TurnBasedSession
from tests.native_g711_sessions import SETTINGS, SID, ULAW_TOLD, native_sessions, update
from tests.shim_script import Script, client_events
from tests.wheel_realtime_session import wheel_session

pytestmark = pytest.mark.timeout(120)

__all__ = ["wheel_session"]


RATE_CASES = [
    {},
    {"sample_rate_hz": 8000},
    {"sample_rate": 24000, "audio": {"input": {"sample_rate_hz": 16000}}},
    {"sample_rate_hz": 8000, "sample_rate": 24000},
    {"sample_rate_hz": 0, "audio": {"input": {"sample_rate": 22050}}},
    {"audio": {"input": {"sample_rate_hz": 8000, "format": {"type": "mulaw", "rate": 24000}}}},
    {"audio": {"input": {"format": {"type": "audio/g711_ulaw", "rate": 24000}}}},
    {"sample_rate_hz": 12000, "audio": {"input": {"format": ULAW_TOLD}}},
    {"sample_rate_hz": "16k", "audio": {"input": {"sample_rate_hz": 8000}}},
    {"sample_rate_hz": 44100.7},
]


@pytest.mark.parametrize("case", range(len(RATE_CASES)))
@pytest.mark.parametrize("name", ["g711_ulaw", "pcm16"])
def test_the_input_rate_is_found_where_the_wheel_finds_it(
    wheel_session: types.ModuleType, case: int, name: str
) -> None:
    """Every native session reads the input rate as the wheel's
    ``apply_realtime_session_defaults`` does, G.711's too."""
    body = RATE_CASES[case]
    fmt_spec = body.get("audio", {}).get("input", {}).get("format")
    session = body if fmt_spec is not None else {"input_audio_format": name, **body}
    wheel = wheel_session.RealtimeInputDefaults().with_session_payload(session)
    encoding = {"pcm16": PCM16, "g711_ulaw": PCMU}[wheel.input_audio_format]
    for s in native_sessions():
        sc = Script(s)
        out = sc.client(update(**session))
        assert not [e for e in client_events(out) if e["type"] == "error"], out
        assert s.config.input_format == AudioFormat(encoding, wheel.input_sample_rate_hz)


def test_a_rate_update_keeps_the_format_and_a_format_update_the_rate(
    wheel_session: types.ModuleType,
) -> None:
    """The wheel keeps the rate apart from the format, across updates."""
    steps = [
        {"input_audio_format": "pcm16", "sample_rate_hz": 24000},
        {"input_audio_format": "g711_alaw"},
        {"sample_rate": 8000},
        {"audio": {"input": {"format": "pcm16"}}},
    ]
    for s in native_sessions():
        sc, wheel = Script(s), wheel_session.RealtimeInputDefaults()
        for step in steps:
            sc.client(update(**step))
            wheel = wheel.with_session_payload(step)
            encoding = {"pcm16": PCM16, "g711_alaw": PCMA}[wheel.input_audio_format]
            assert s.config.input_format == AudioFormat(encoding, wheel.input_sample_rate_hz)


def test_a_ga_clients_g711_stays_8_khz() -> None:
    """GA's G.711 names no rate, and one other than 8000 is refused as before."""
    for s in (
        GaRelaySession(SID, "m", SETTINGS, {}),
        TurnBasedSession(SID, "m", "m-up", SETTINGS),
    ):
        sc = Script(s)
        sc.client(update(audio={"input": {"format": {"type": "audio/pcmu"}}}))
        assert s.config.input_format == AudioFormat(PCMU, 8000)
        out = sc.client(update(audio={"input": {"format": {"type": "audio/pcmu", "rate": 16000}}}))
        (err,) = [e for e in client_events(out) if e["type"] == "error"]
        assert err["error"]["code"] == "invalid_value"


def test_the_session_object_a_native_client_is_told_can_be_sent_back() -> None:
    """Over a turn-based upstream the proxy tells a native client its session in
    vLLM-Omni's shape and names (``realtime_session_payload``); sent back, it changes
    nothing and is not refused (GA's ``audio/pcmu`` would be)."""
    s = TurnBasedSession(SID, "m", "m-up", SETTINGS, native_client=True)
    sc = Script(s)
    (told,) = client_events(sc.client(update(input_audio_format="g711_ulaw")))
    session = told["session"]
    assert session["input_audio_format"] == "g711_ulaw"
    assert session["audio"]["input"] == {"format": ULAW_TOLD, "sample_rate_hz": 16000}
    before = s.config
    (again,) = client_events(sc.client(update(**session)))
    assert again["type"] == "session.updated" and again["session"] == session
    assert s.config == before


@pytest.mark.parametrize("rate", [24000, 8000])
@pytest.mark.parametrize("kind", ["relay", "turn"])
def test_a_resume_keeps_a_native_g711_rate(kind: str, rate: int) -> None:
    """The snapshot keeps a native client's G.711 rate, 8 kHz too (not the fresh
    session's 16 kHz): another replica reads the client's audio as before (and the
    input clock is told so)."""
    made = native_sessions()
    one = made[0] if kind == "relay" else made[1]
    Script(one).client(update(input_audio_format="g711_ulaw", sample_rate_hz=rate))
    # The stored input is ["pcmu", rate], as before the rate was always written back.
    assert one.snapshot()["input_format"] == [PCMU, rate]
    assert one.config.input_format == AudioFormat(PCMU, rate)
    other = native_sessions()[0 if kind == "relay" else 1]
    other.restore(one.snapshot())
    assert other.config.input_format == AudioFormat(PCMU, rate)
    assert other.config.native
