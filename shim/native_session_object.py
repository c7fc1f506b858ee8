"""The session object a vLLM-Omni-native client is told, in vLLM-Omni's shape.

vLLM-Omni's ``session.created`` / ``session.updated`` (its
``engine/duplex/realtime_events.py``, ``realtime_session_payload``) name the formats
flat (``input_audio_format: "g711_ulaw"``) and under ``audio`` as format objects in its
own names with their rate (``{"type": "audio/g711_ulaw", "rate": 16000}``), the input
rate again as ``audio.input.sample_rate_hz``, and turn detection at the top. A native
client may send that object back in a ``session.update``; GA's shape
(``{"type": "audio/pcmu"}``) names formats vLLM-Omni refuses, so a native client is
told its session in vLLM-Omni's shape (docs/protocol.md, "Native clients").
"""

from __future__ import annotations

from typing import Any

from shim.audio import PCM16, PCM_F32, PCMA, PCMU, AudioFormat
from shim.native_turns import PROXY_FIELDS, SERVER_VAD_FIELDS

# The proxy's encodings in vLLM-Omni's names: flat, and as a format object's type.
_FLAT = {PCM16: "pcm16", PCM_F32: "pcm_f32le", PCMU: "g711_ulaw", PCMA: "g711_alaw"}
_TYPED = {
    PCM16: "audio/pcm",
    PCM_F32: "audio/pcm_f32le",
    PCMU: "audio/g711_ulaw",
    PCMA: "audio/g711_alaw",
}


def _implied_rate(fmt: AudioFormat) -> int:
    """The output rate vLLM-Omni reads from a flat format name alone."""
    return 8000 if fmt.encoding in (PCMU, PCMA) else 24000


def native_format(fmt: AudioFormat) -> dict[str, Any]:
    """A format object as vLLM-Omni writes it (``realtime_audio_format_object``)."""
    return {"type": _TYPED.get(fmt.encoding, "audio/pcm"), "rate": fmt.rate_hz}


def native_session_object(
    session_id: str,
    model: str,
    formats: tuple[AudioFormat, AudioFormat],
    turn_detection: dict[str, Any] | None,
    instructions: str | None,
    transcription: dict[str, Any] | None,
) -> dict[str, Any]:
    """The session (``formats``: input, output) as vLLM-Omni's object tells it; its
    turn detection with only the fields vLLM-Omni takes back (and the proxy's own)."""
    inp, out = formats
    if turn_detection is not None:
        kept = SERVER_VAD_FIELDS | PROXY_FIELDS
        turn_detection = {k: v for k, v in turn_detection.items() if k in kept}
    flat_out = _FLAT.get(out.encoding, "pcm16")
    return {
        "object": "realtime.session",
        "type": "realtime",
        "id": session_id,
        "model": model,
        "modalities": ["text", "audio"],
        "output_modalities": ["text", "audio"],
        "instructions": instructions,
        "input_audio_format": _FLAT.get(inp.encoding, "pcm16"),
        # A flat name is read first and carries no rate: the format itself where its
        # rate is not the one the name implies, so the object reads back as it is.
        "output_audio_format": flat_out
        if out.rate_hz == _implied_rate(out)
        else native_format(out),
        "audio": {
            "input": {"format": native_format(inp), "sample_rate_hz": inp.rate_hz},
            "output": {"format": native_format(out)},
        },
        "turn_detection": turn_detection,
        "input_audio_transcription": transcription,
        "tracing": None,
    }
