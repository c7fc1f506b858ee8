"""A native client's ``session.update`` in the barge-in relay: vLLM-Omni refuses one
only for its audio formats (its ``validate_realtime_session_audio_formats``), which
then go there unapplied here; one it would take but the proxy cannot is refused by
the proxy, and neither side takes any of it (``shim/dialects/duplex_relay.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from shim.audio import PCM16, PCMA, PCMU
from shim.dialects.relay_wire import upstream_format_refusal
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import UpstreamLost
from shim.native_client import native_error
from shim.session import ShimSettings
from shim.settings import VadParams
from tests.duplex_relay_script import make, relay
from tests.shim_script import Script, client_events, upstream_events


@pytest.mark.parametrize(
    "audio",
    [
        {"output_audio_format": "wav"},  # vLLM-Omni answers in WAV; the proxy cannot
        {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 4000}}}},
    ],
)
def test_what_only_the_proxy_refuses_is_refused_whole(audio: dict[str, Any]) -> None:
    sc = make()
    sc.client({"type": "session.update", "session": {"turn_detection": None}})
    kept = relay(sc).last_update
    session = {**audio, "turn_detection": {"type": "server_vad"}, "instructions": "be brief"}
    out = sc.client({"type": "session.update", "session": session})
    assert not upstream_events(out), "the upstream would take the rest the proxy does not"
    (err,) = client_events(out)
    assert err["type"] == "error"
    assert sc.s.config.turn.vad is None and relay(sc).last_update == kept


def test_what_vllm_omni_refuses_goes_there_unapplied() -> None:
    sc = make()
    session = {"input_audio_format": "opus", "instructions": "be brief"}
    out = sc.client({"type": "session.update", "session": session})
    assert not client_events(out), "the upstream refuses it, in its own words"
    (sent,) = upstream_events(out)
    assert sent["session"]["input_audio_format"] == "opus"
    assert sc.s.config.instructions != "be brief"


@pytest.mark.parametrize(
    ("session", "refusal"),
    [
        ({"output_audio_format": "wav"}, None),
        ({"output_audio_format": "audio/wav"}, None),
        ({"input_audio_format": "wav"}, "Unsupported input_audio_format: wav"),
        ({"output_audio_format": "pcm_f32le"}, "Unsupported output_audio_format: pcm_f32le"),
        (
            {"audio": {"input": {"format": {"type": "audio/pcmu"}}}},
            "Unsupported input_audio_format",
        ),
        ({"audio": {"output": {"format": {"type": "g711_alaw", "rate": 16000}}}}, None),
    ],
)
def test_the_formats_vllm_omni_refuses(session: dict[str, Any], refusal: str | None) -> None:
    said = upstream_format_refusal({"type": "session.update", "session": session})
    if refusal is None:
        assert said is None
    else:
        assert said is not None and said.startswith(refusal)


@pytest.mark.parametrize(
    ("session", "encoding", "side"),
    [
        # The server's own session object, sent back as it came.
        ({"audio": {"input": {"format": {"type": "audio/g711_ulaw"}}}}, PCMU, "input"),
        ({"audio": {"output": {"format": {"type": "audio/g711_alaw"}}}}, PCMA, "output"),
        ({"audio": {"input": {"format": {"type": "audio/pcm16", "rate": 16000}}}}, PCM16, "input"),
        ({"audio": {"input": {"format": "ulaw"}}}, PCMU, "input"),
        ({"input_audio_format": "mulaw"}, PCMU, "input"),
        ({"input_audio_format": "g711-alaw"}, PCMA, "input"),
        ({"input_audio_format": "audio/g711_ulaw"}, PCMU, "input"),
        ({"response_format": "alaw"}, PCMA, "output"),
        # vLLM-Omni reads the flat name before ``audio.input.format``.
        ({"input_audio_format": "alaw", "audio": {"input": {"format": "pcm16"}}}, PCMA, "input"),
    ],
)
def test_every_spelling_vllm_omni_takes_applies_here_too(
    session: dict[str, Any], encoding: str, side: str
) -> None:
    assert upstream_format_refusal({"session": session}) is None
    sc = make()
    out = sc.client({"type": "session.update", "session": session})
    assert not client_events(out), "the upstream takes it: the proxy refuses nothing"
    (sent,) = upstream_events(out)
    assert sent["session"] == session, "the upstream gets it as the client spelled it"
    fmt = sc.s.config.input_format if side == "input" else sc.s.config.output_format
    assert fmt.encoding == encoding


@pytest.mark.parametrize("spec", ["wav", "audio/wav", {"type": "audio/wav"}])
def test_wav_output_is_refused_in_the_proxy_words(spec: object) -> None:
    sc = make()
    out = sc.client({"type": "session.update", "session": {"output_audio_format": spec}})
    assert not upstream_events(out)
    (err,) = client_events(out)
    said = native_error(err)["error"]
    assert said["code"] == "unsupported_by_proxy", "not dressed as vLLM-Omni's refusal"
    assert not said["message"].startswith("Unsupported output_audio_format")


def native_turn_based() -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    return Script(TurnBasedSession("sess_0123456789abcdef", "m", "m", settings, native_client=True))


@pytest.mark.parametrize(
    ("session", "encoding"),
    [
        ({"input_audio_format": "mulaw"}, PCMU),
        ({"audio": {"input": {"format": {"type": "audio/pcm16", "rate": 16000}}}}, PCM16),
        ({"audio": {"input": {"format": {"type": "audio/g711_alaw"}}}}, PCMA),
    ],
)
def test_over_a_turn_based_upstream_a_native_spelling_applies_too(
    session: dict[str, Any], encoding: str
) -> None:
    sc = native_turn_based()
    out = sc.client({"type": "session.update", "session": session})
    assert not [e for e in client_events(out) if e["type"] == "error"], out
    assert sc.s.config.input_format.encoding == encoding


def test_over_a_turn_based_upstream_wav_output_is_refused_in_the_proxy_words() -> None:
    sc = native_turn_based()
    out = sc.client({"type": "session.update", "session": {"output_audio_format": "wav"}})
    (err,) = client_events(out)
    assert native_error(err)["error"]["code"] == "unsupported_by_proxy"


def test_a_fresh_upstream_runs_the_turn_detection_an_earlier_update_declared() -> None:
    """vLLM-Omni's detector runs on through an update that names no turn detection
    (``engine/duplex/session/control.py``): a fresh upstream session after a loss is
    given it with the client's last update, which goes up as it came."""
    sc = make()
    vad = {"type": "server_vad", "silence_duration_ms": 400}
    sc.client({"type": "session.update", "session": {"turn_detection": vad}})
    (sent,) = upstream_events(
        sc.client({"type": "session.update", "session": {"instructions": "x"}})
    )
    assert sent["session"] == {"instructions": "x"}
    lost = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    (restore,) = [e for e in upstream_events(lost) if e["type"] == "session.update"]
    assert restore["session"] == {"instructions": "x", "turn_detection": vad}
