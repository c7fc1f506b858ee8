"""G.711 formats, pure: what a client may declare, what the session echoes, the codec."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from openai.types.realtime.realtime_audio_formats import RealtimeAudioFormats
from pydantic import TypeAdapter

from shim.actions import SendClient, SendClientAudio, SendUpstream
from shim.assistant_audio import AssistantAudio
from shim.audio import PCM16, PCMA, PCMU, AudioFormat, decode_samples, encode_samples
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.ga_upstream import upstream_session
from shim.session import ShimSettings
from shim.session_config import (
    ClientSessionConfig,
    SessionConfigError,
    apply_session_update,
    session_object,
)
from shim.snapshot import SessionSnapshot
from shim.upstream_input import AppendConverter
from shim.vad_gate import VadParams
from tests.servers import load_clip
from tests.shim_script import Script

FORMATS: TypeAdapter[Any] = TypeAdapter(RealtimeAudioFormats)


def update(fmt: Any, cfg: ClientSessionConfig | None = None) -> ClientSessionConfig:
    ev = {"type": "session.update", "session": {"audio": {"input": {"format": fmt}}}}
    ev["session"]["audio"]["output"] = {"format": fmt}
    return apply_session_update(cfg or ClientSessionConfig(), ev, VadParams())


@pytest.mark.parametrize(
    ("declared", "encoding"),
    [
        ({"type": "audio/pcmu"}, PCMU),
        ({"type": "audio/pcma"}, PCMA),
        ({"type": "audio/pcmu", "rate": 8000}, PCMU),
        ("g711_ulaw", PCMU),  # the beta API's names
        ("g711_alaw", PCMA),
    ],
)
def test_g711_is_declared_both_ways_at_8_khz_and_echoed_as_ga(declared: Any, encoding: str) -> None:
    cfg = update(declared)
    assert cfg.input_format == cfg.output_format == AudioFormat(encoding, 8000)
    session = session_object("sess_1", "m", cfg)
    for part in ("input", "output"):
        wire = session["audio"][part]["format"]
        assert wire == {"type": f"audio/{encoding}"}
        FORMATS.validate_python(wire)


def test_g711_at_another_rate_is_refused_and_changes_nothing() -> None:
    with pytest.raises(SessionConfigError) as refused:
        update({"type": "audio/pcmu", "rate": 16000})
    assert refused.value.code == "invalid_value"
    with pytest.raises(SessionConfigError) as unknown:
        update({"type": "audio/opus"})
    assert unknown.value.code == "unsupported_audio_format"


def test_rates_carry_over_between_pcm_formats_but_not_from_g711() -> None:
    pcm16k = update({"type": "audio/pcm", "rate": 16000})
    assert update({"type": "audio/pcmu"}, pcm16k).input_format == AudioFormat(PCMU, 8000)
    back = update({"type": "audio/pcm"}, update({"type": "audio/pcma"}))
    assert back.input_format == back.output_format == AudioFormat(PCM16, 24000)


def test_known_codes_decode_to_the_g711_levels() -> None:
    # μ-law 0xFF and A-law 0xD5 are the smallest positive steps; μ-law 0x00 the most
    # negative, A-law 0xAA the most positive (ITU-T G.711 tables).
    assert decode_samples(b"\xff\x00", AudioFormat(PCMU, 8000)).tolist() == [0, -32124]
    assert decode_samples(b"\xd5\xaa", AudioFormat(PCMA, 8000)).tolist() == [8, 32256]


@pytest.mark.parametrize("encoding", [PCMU, PCMA])
def test_a_clip_survives_the_codec_within_g711_noise(encoding: str) -> None:
    pcm = np.frombuffer(load_clip("utt05_clean.wav"), dtype="<i2").astype(np.int16)
    fmt = AudioFormat(encoding, 8000)
    coded = encode_samples(pcm, fmt)
    assert len(coded) == pcm.size and fmt.bytes_per_sample == 1
    assert fmt.ms(len(coded)) == pcm.size / 8  # 8 bytes a millisecond
    back = decode_samples(coded, fmt).astype(np.float64)
    noise = back - pcm.astype(np.float64)
    snr_db = 10 * np.log10(np.sum(pcm.astype(np.float64) ** 2) / np.sum(noise**2))
    assert snr_db > 30, snr_db  # G.711 is ~38 dB on speech


def test_a_g711_append_goes_up_as_pcm16() -> None:
    tone = (np.sin(np.arange(800) / 5) * 8000).astype(np.int16)
    ulaw = encode_samples(tone, AudioFormat(PCMU, 8000))
    conv = AppendConverter(AudioFormat(PCM16, 8000))
    [up] = conv.appends(
        {"type": "input_audio_buffer.append", "audio": base64.b64encode(ulaw).decode()},
        AudioFormat(PCMU, 8000),
    )
    pcm = np.frombuffer(base64.b64decode(up["audio"]), dtype="<i2")
    assert pcm.size == tone.size
    assert np.max(np.abs(pcm.astype(int) - tone)) < 300


def test_answer_audio_is_encoded_at_8_khz() -> None:
    out, fmt = AssistantAudio(), AudioFormat(PCMU, 8000)
    second = (np.sin(np.arange(24000) / 7) * 6000).astype(np.int16)
    sent = []
    for chunk in np.array_split(second, 10):
        action = out.convert(chunk, 24000, fmt, False, lambda d: {"delta": d})
        sent += [action] if action is not None else []
    rest = out.flush(fmt, lambda d: {"delta": d})
    sent += [rest] if rest is not None else []
    assert all(isinstance(a, SendClientAudio) and a.rate_hz == 8000 for a in sent)
    assert sum(a.n_samples for a in sent) == 8000  # the playback clock: samples at 8 kHz


def test_upstream_gets_pcm16_and_snapshot_restores_g711() -> None:
    cfg = update({"type": "audio/pcmu"})
    fmt = {"type": "audio/pcmu"}
    up = upstream_session(
        {"audio": {"input": {"format": fmt}, "output": {"format": fmt}}}, cfg, True
    )
    assert (up["input_audio_format"], up["sample_rate_hz"]) == ("audio/pcm", 8000)
    assert up["audio"]["output"]["format"] == {"type": "audio/pcm"}
    snap = SessionSnapshot(0, None, ("pcmu", 8000), ("pcma", 8000), None, None, None)
    restored = apply_session_update(ClientSessionConfig(), snap.config_update(), VadParams())
    assert restored.input_format == AudioFormat(PCMU, 8000)
    assert restored.output_format == AudioFormat(PCMA, 8000)


def test_a_native_relay_client_declares_g711_as_vllm_omni_names_it() -> None:
    """vLLM-Omni takes ``g711_ulaw`` / ``g711_alaw`` from a native client and refuses
    GA's ``audio/pcmu`` (its ``protocol/realtime/formats.py``): the relay forwards
    both, and applies only what the upstream takes (docs/protocol.md, "Audio formats")."""
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    sc = Script(BargeInRelaySession("sess_0123456789abcdef", "m", settings, {}))
    relay = sc.s
    assert isinstance(relay, BargeInRelaySession)
    ga = {"type": "session.update", "session": {"output_audio_format": "audio/pcma"}}
    out = sc.client(ga)
    assert not [a for a in out if isinstance(a, SendClient)]
    assert [a.event for a in out if isinstance(a, SendUpstream)] == [ga]
    assert relay.config.output_format.encoding == PCM16  # the upstream refuses it
    native = {"type": "session.update", "session": {"input_audio_format": "g711_ulaw"}}
    out = sc.client(native)
    assert not [a for a in out if isinstance(a, SendClient)]
    assert [a.event for a in out if isinstance(a, SendUpstream)] == [native]
    # At the session's rate, 16 kHz unless declared (its ``protocol/realtime/session.py``).
    assert relay.config.input_format == AudioFormat(PCMU, 16000)


@pytest.mark.parametrize("key", ["output_audio_format"])
def test_g711_output_named_by_another_key_goes_up_as_pcm16(key: str) -> None:
    """vLLM-Omni reads the beta key before GA's ``audio.output.format`` and would send
    G.711, which the proxy (encoding it itself) would take for PCM16."""
    session = {"type": "realtime", key: "g711_ulaw"}
    cfg = apply_session_update(
        ClientSessionConfig(), {"type": "session.update", "session": session}, VadParams()
    )
    assert cfg.output_format.encoding == PCMU
    up = upstream_session(session, cfg, opening=True)
    assert key not in up
    assert up["audio"]["output"]["format"] == {"type": "audio/pcm"}


def test_the_upstreams_own_output_format_key_never_reaches_it() -> None:
    """The proxy does not read ``response_format``: passed on, the upstream would send
    audio in a format the proxy does not know it is getting."""
    session = {"type": "realtime", "response_format": "g711_ulaw"}
    cfg = apply_session_update(
        ClientSessionConfig(), {"type": "session.update", "session": session}, VadParams()
    )
    assert "response_format" not in upstream_session(session, cfg, opening=True)


def test_a_switch_to_g711_mid_answer_resamples_the_rest_to_8_khz() -> None:
    """The client's output format changed between two deltas of one response: the rest
    comes at 8 kHz, and the playback clock counts it so."""
    out = AssistantAudio()
    second = (np.sin(np.arange(24000) / 7) * 6000).astype(np.int16)
    first, rest = np.array_split(second, 2)
    out.convert(first, 24000, AudioFormat(PCM16, 24000), False, lambda d: {"delta": d})
    fmt = AudioFormat(PCMU, 8000)
    sent = [out.convert(rest, 24000, fmt, False, lambda d: {"delta": d})]
    sent.append(out.flush(fmt, lambda d: {"delta": d}))
    audio = [a for a in sent if a is not None]
    assert all(a.rate_hz == 8000 for a in audio)
    assert abs(sum(a.n_samples for a in audio) - 4000) <= 1
