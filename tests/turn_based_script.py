"""duplex_emulated sessions by script for the turn-based dialect's tests: a session over a
turn-based upstream, a VAD turn, the upstream's answer, and a native client's opening
and appends."""

from __future__ import annotations

from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, pcm_b64, types

SPEECH = [0.9] * 20  # 640 ms of speech
SILENCE = [0.05] * 20  # 640 ms: longer than silence_duration_ms (500)


def make(min_barge_in_ms: int = 200, echo: bool = False, decision_ms: int = 500) -> Script:
    settings = ShimSettings(
        vad=VadParams(),
        min_barge_in_ms=min_barge_in_ms,
        echo_suppression=echo,
        barge_in_decision_ms=decision_ms,
    )
    return Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))


def run_turn(sc: Script) -> list:  # type: ignore[type-arg]
    return sc.speak([0.05] * 5 + SPEECH + SILENCE)


def respond(sc: Script, chunks: int = 10, chunk_ms: int = 100) -> list:  # type: ignore[type-arg]
    out = []
    for i in range(chunks):
        out += sc.upstream({"type": "transcription.delta", "delta": f"w{i} "})
        out += sc.upstream(
            {
                "type": "response.output_audio.delta",
                "audio": pcm_b64(chunk_ms, 24000),
                "format": "pcm16",
                "sample_rate_hz": 24000,
            }
        )
    return out


# vLLM-Omni's DuplexClient opens like this (docs/protocol.md, "Native clients").
NATIVE_OPEN = {
    "type": "session.update",
    "session": {
        "model": "demo",
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "sample_rate_hz": 16000,
        "audio": {"input": {"sample_rate_hz": 16000}, "output": {"sample_rate_hz": 24000}},
        "turn_detection": None,
        "extra_body": {"auto_response": True},
    },
}


def native_append(ms: int, rate: int = 16000) -> dict:  # type: ignore[type-arg]
    return {
        "type": "input_audio_buffer.append",
        "audio": pcm_b64(ms, rate),
        "format": "pcm16",
        "sample_rate_hz": rate,
    }


def native() -> Script:
    sc = make()
    assert types(sc.client(NATIVE_OPEN)) == ["session.updated"]
    return sc
