"""The models a duplex stand-in can pretend to be, and what each demands at open.

Values come from each model's duplex preset in vLLM-Omni 0.30.0:

* ``minicpmo`` -- ``minicpmo_4_5/duplex/capabilities.py`` (barge-in, 1000 ms chunks, no
  barge-in latency target) and ``plugin.py`` (audio output needs ``ref_audio``);
* ``nemotron`` -- ``nemotron_voicechat/duplex/capabilities.py`` (no barge-in, 80 ms chunks)
  and ``plugin.py`` (needs ``extra_body.auto_response`` or ``full_duplex``);
* ``personaplex`` -- ``personaplex/duplex/serving_adapter.py`` (no client commit, no
  resume, 80 ms chunks) and ``input.py`` (``pcm_f32le`` at 24 kHz only);
* ``qwen3omni`` -- ``qwen3_omni/duplex/plugin.py`` (barge-in, text-only turns; refuses
  ``extra_body.auto_response`` and ``ref_audio``).

``generic`` is a duplex model with no open requirements whose capabilities follow the
backend kind, exactly as the stand-ins behaved before profiles existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelProfile:
    name: str
    #: ``None``: the backend kind decides ("duplex" can barge in, "duplex-no-barge-in" not).
    barge_in: bool | None = None
    #: ``capabilities.chunk_period_ms`` and the reply chunk; ``None``: the kind's default.
    chunk_ms: int | None = None
    client_commit: bool = True
    session_resume: bool = True
    #: The only rate a ``pcm_f32le`` append may declare.
    f32_rate_hz: int = 16000
    #: False: the model reads ``pcm_f32le`` only; PCM16/G.711 appends (converted to 16 kHz
    #: float by the envelope) fail with the model's own rate error.
    accepts_converted_pcm: bool = True
    #: Named presets advertise ``target_barge_in_latency_ms: null``.
    declares_latency_target: bool = False
    #: ``supports_text_only_turn``: a ``response.create`` over user text items alone is a turn.
    text_only_turn: bool = False
    #: ``supports_chat_completions`` (not advertised): a refused text turn names
    #: ``initial_user_text`` as the way to ask it in text.
    chat_completions: bool = False


GENERIC = ModelProfile("generic", declares_latency_target=True)
MINICPMO = ModelProfile("minicpmo", barge_in=True, chunk_ms=1000, chat_completions=True)
NEMOTRON = ModelProfile("nemotron", barge_in=False, chunk_ms=80)
PERSONAPLEX = ModelProfile(
    "personaplex",
    barge_in=False,
    chunk_ms=80,
    client_commit=False,
    session_resume=False,
    f32_rate_hz=24000,
    accepts_converted_pcm=False,
)
QWEN3OMNI = ModelProfile("qwen3omni", barge_in=True, text_only_turn=True, chat_completions=True)

PROFILES: dict[str, ModelProfile] = {
    p.name: p for p in (GENERIC, MINICPMO, NEMOTRON, PERSONAPLEX, QWEN3OMNI)
}

#: PersonaPlex's own message for input that is not 24 kHz float (``personaplex/duplex/input.py``).
PERSONAPLEX_RATE_ERROR = "PersonaPlex sample_rate_hz must be 24000"


def _extra_body(payload: Mapping[str, object]) -> Mapping[str, object]:
    extra = payload.get("extra_body")
    return extra if isinstance(extra, dict) else {}


def _has_ref_audio(payload: Mapping[str, object]) -> bool:
    extra = _extra_body(payload)
    return any(
        isinstance(source.get(key), str)
        for source, key in ((payload, "ref_audio"), (extra, "ref_audio"), (extra, "tts_ref_audio"))
    )


def open_refusal(
    name: str, payload: Mapping[str, object], modalities: list[object]
) -> tuple[str, str] | None:
    """``(code, message)`` when model ``name`` refuses to open with ``payload``."""
    extra = _extra_body(payload)
    if name == MINICPMO.name:
        if not _has_ref_audio(payload) and any(str(m).lower() == "audio" for m in modalities):
            return "ref_audio_required", "MiniCPM-o duplex audio output requires ref_audio"
    elif name == NEMOTRON.name:
        if extra.get("auto_response") is not True and extra.get("full_duplex") is not True:
            return (
                "unsupported_nemotron_duplex_mode",
                "Nemotron VoiceChat currently supports model-native full-duplex streaming only; "
                "set extra_body.auto_response=true",
            )
    elif name == QWEN3OMNI.name:
        if extra.get("auto_response"):
            return (
                "invalid_duplex_runtime_config",
                "Qwen requires server VAD or explicit commits; native auto_response is unsupported",
            )
        if isinstance(payload.get("ref_audio"), str):
            return (
                "invalid_duplex_runtime_config",
                "Qwen duplex does not support reference voice audio",
            )
    return None
