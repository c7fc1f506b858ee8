"""What a duplex session says about itself: capabilities and the ``session`` object.

Capabilities are ``DuplexCapabilities.as_dict()`` (every key, in its order:
``engine/duplex/config.py``) with the values of the presets the two duplex
kinds stand in for: kind "duplex" is MiniCPM-o 4.5 (barge-in, truncate), kind
"duplex-no-barge-in" is Nemotron VoiceChat (hears overlap, cannot cut itself).

The ``session`` object is ``as_public_dict()`` plus every other key the client
sent except ``extra_body`` (echoed, ``ref_audio`` included), and for
``session.created``/``session.updated`` the ``realtime_session_payload``
defaults (notes §2).
"""

from __future__ import annotations

from collections.abc import Mapping

from proxy.reference.options import KIND_DUPLEX, ReferenceOptions


def capabilities(kind: str, options: ReferenceOptions) -> dict[str, object]:
    barge_in = kind == KIND_DUPLEX
    return {
        "supports_session_adapter": True,
        "supports_model_native_turn_policy": True,
        "supports_external_turn_signal": barge_in,
        "supports_client_commit": True,
        "supports_barge_in": barge_in,
        "supports_playback_ack": True,
        "supports_input_append": True,
        "supports_replace_latest_chunk": False,
        "supports_reencode_context": False,
        "supports_rollback_to_checkpoint": False,
        "supports_turn_commit_only": False,
        "supports_kv_lease": False,
        "supports_core_kv_lease": False,
        "supports_model_internal_state": True,
        "supports_stage_resumption": True,
        "supports_scheduler_native_append": False,
        "supports_core_resumable_request": True,
        "supports_concurrent_turn_requests": False,
        "required_input_modalities": ["audio"],
        "optional_input_modalities": ["video"],
        "supports_stage_connector_handoff": True,
        "supports_independent_io_streams": True,
        "supports_realtime_endpoint": True,
        "supports_multi_session": barge_in,
        "supports_multi_session_same_replica": barge_in,
        "supports_session_lease": True,
        "supports_session_resume": True,
        "session_admission_mode": "engine_managed",
        "supports_audio_truncate": barge_in,
        "supports_image_input": False,
        "supports_text_only_turn": False,
        "requires_model_runner_kv": True,
        "requires_native_stage_role": True,
        "implementation_level": "model_native_duplex",
        "adapter_patterns": ["scheduler_data_plane"],
        "input_modes": ["append_audio_chunk"],
        "signal_sources": (
            ["model_native", "client_event", "server_policy"]
            if barge_in
            else ["model_native", "client_event"]
        ),
        "stage_handoff_transport": "scheduler_data_plane",
        "chunk_period_ms": options.chunk_ms_for(kind),
        "target_barge_in_latency_ms": options.target_barge_in_latency_ms if barge_in else None,
    }


# ---- audio formats (protocol/realtime/formats.py) ----

INPUT_FORMATS = frozenset({"pcm16", "pcm_s16le", "s16le", "pcm_f32le", "g711_ulaw", "g711_alaw"})
OUTPUT_FORMATS = frozenset({"pcm16", "pcm_s16le", "s16le", "wav", "pcm", "g711_ulaw", "g711_alaw"})
_SPELLINGS = {
    "audio/pcm": "pcm16",
    "pcm": "pcm16",
    "audio/pcm16": "pcm16",
    "pcm16": "pcm16",
    "pcm_s16le": "pcm16",
    "s16le": "pcm16",
    "audio/wav": "wav",
    "wav": "wav",
    "audio/pcm_f32le": "pcm_f32le",
    "pcm_f32le": "pcm_f32le",
    "f32le": "pcm_f32le",
    "audio/g711_ulaw": "g711_ulaw",
    "g711_ulaw": "g711_ulaw",
    "g711-ulaw": "g711_ulaw",
    "ulaw": "g711_ulaw",
    "mulaw": "g711_ulaw",
    "audio/g711_alaw": "g711_alaw",
    "g711_alaw": "g711_alaw",
    "g711-alaw": "g711_alaw",
    "alaw": "g711_alaw",
}


def parse_format(raw: object) -> tuple[object, int | None]:
    """``"audio/pcm"`` or ``{type|format, rate|sample_rate_hz|sample_rate}`` -> (format, rate)."""
    if isinstance(raw, str):
        return _SPELLINGS.get(raw.lower(), raw), None
    if not isinstance(raw, dict):
        return raw, None
    rate = raw.get("rate") or raw.get("sample_rate_hz") or raw.get("sample_rate")
    rate_hz = int(rate) if isinstance(rate, int | float) and rate > 0 else None
    fmt = raw.get("type") or raw.get("format")
    if not isinstance(fmt, str):
        return raw, rate_hz
    return _SPELLINGS.get(fmt.lower(), fmt), rate_hz


def _audio_part(payload: Mapping[str, object], part: str) -> Mapping[str, object]:
    audio = payload.get("audio")
    section = audio.get(part) if isinstance(audio, dict) else None
    return section if isinstance(section, dict) else {}


def _declared_input_format(payload: Mapping[str, object]) -> object:
    declared = payload.get("input_audio_format")
    return declared if declared is not None else _audio_part(payload, "input").get("format")


def _declared_output_format(payload: Mapping[str, object]) -> object:
    declared = payload.get("output_audio_format") or payload.get("response_format")
    return declared if declared is not None else _audio_part(payload, "output").get("format")


def _format_error(payload: Mapping[str, object]) -> str | None:
    declared_in = _declared_input_format(payload)
    parsed_in, _ = parse_format(declared_in)
    if declared_in is not None and not (
        isinstance(parsed_in, str) and parsed_in.lower() in INPUT_FORMATS
    ):
        return f"Unsupported input_audio_format: {declared_in}"
    declared_out = _declared_output_format(payload)
    parsed_out, _ = parse_format(declared_out)
    if declared_out is not None and not (
        isinstance(parsed_out, str) and parsed_out.lower() in OUTPUT_FORMATS
    ):
        return f"Unsupported output_audio_format: {declared_out}"
    return None


# ---- turn detection (engine/duplex/turn_detection.py) ----

_SERVER_VAD_FIELDS = frozenset(
    {
        "type",
        "threshold",
        "prefix_padding_ms",
        "silence_duration_ms",
        "create_response",
        "interrupt_response",
        "min_speech_duration_ms",
    }
)
_VAD_MIN_THRESHOLD = 0.15


def _turn_detection_field(payload: Mapping[str, object]) -> tuple[str | None, object]:
    field = "turn_detection" if "turn_detection" in payload else None
    selected = payload.get("turn_detection")
    audio_in = _audio_part(payload, "input")
    if "turn_detection" in audio_in:
        field, selected = "audio.input.turn_detection", audio_in["turn_detection"]
    return field, selected


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _turn_detection_error(payload: Mapping[str, object]) -> str | None:
    field, td = _turn_detection_field(payload)
    if field is None:
        if payload.get("overlap_policy") == "barge_in_on_speech":
            return (
                "overlap_policy='barge_in_on_speech' requires turn_detection.type='server_vad' "
                "on the Realtime endpoint"
            )
        return None
    if td is not None and not isinstance(td, dict):
        return f"{field} must be null or an object with type='server_vad'"
    if isinstance(td, dict):
        if td.get("type") != "server_vad":
            return f"{field}.type must be 'server_vad'"
        unknown = sorted(set(td) - _SERVER_VAD_FIELDS)
        if unknown:
            return f"Unknown {field} field(s): {', '.join(unknown)}"
        threshold = td.get("threshold", 0.5)
        if not (_number(threshold) and _VAD_MIN_THRESHOLD < float(threshold) <= 1):
            return f"{field}.threshold must be greater than {_VAD_MIN_THRESHOLD} and at most 1"
        for name in ("prefix_padding_ms", "silence_duration_ms", "min_speech_duration_ms"):
            value = td.get(name)
            if value is not None and not (_number(value) and float(value) >= 0):
                return f"{field}.{name} must be a non-negative number"
        if td.get("interrupt_response", True) is not True:
            return (
                f"{field}.interrupt_response=false is unsupported; "
                "use turn_detection=null for model-owned listen/speak"
            )
    desired = "barge_in_on_speech" if td is not None else "listen_only"
    policy = payload.get("overlap_policy")
    if isinstance(policy, str) and policy != desired:
        return f"overlap_policy={policy!r} conflicts with turn_detection; expected {desired!r}"
    return None


def validate_session_object(payload: Mapping[str, object]) -> tuple[str, str, str | None] | None:
    """Translate-time check of a session object: (code, message, param) or None."""
    message = _format_error(payload)
    if message is not None:
        return "unsupported_audio_format", message, None
    message = _turn_detection_error(payload)
    if message is not None:
        return "unsupported_turn_detection", message, "turn_detection"
    return None


def normalize_turn_detection(payload: dict[str, object]) -> None:
    """Fill ``server_vad`` defaults and derive ``overlap_policy`` in place."""
    field, td = _turn_detection_field(payload)
    if field is None:
        return
    if td is None:
        payload["overlap_policy"] = "listen_only"
        return
    if isinstance(td, dict):
        merged: dict[str, object] = {
            "type": "server_vad",
            "interrupt_response": True,
            "threshold": 0.5,
            "prefix_padding_ms": 300,
            "silence_duration_ms": 500,
            "min_speech_duration_ms": 96,
            **td,
        }
        payload["turn_detection"] = merged
        payload["overlap_policy"] = "barge_in_on_speech"


# ---- per-connection input defaults (RealtimeInputDefaults) ----


class InputDefaults:
    """Format/rate used for appends that do not say; folded from every session object."""

    __slots__ = ("fmt", "output_fmt", "rate_hz")

    def __init__(self, fmt: str = "pcm16", rate_hz: int = 16000, output_fmt: str = "pcm16") -> None:
        self.fmt = fmt
        self.rate_hz = rate_hz
        self.output_fmt = output_fmt

    def fold(self, payload: Mapping[str, object]) -> None:
        parsed, format_rate = parse_format(_declared_input_format(payload))
        if isinstance(parsed, str) and parsed.lower() in INPUT_FORMATS:
            self.fmt = parsed.lower()
        audio_in = _audio_part(payload, "input")
        rate = (
            payload.get("sample_rate_hz")
            or payload.get("sample_rate")
            or audio_in.get("sample_rate_hz")
            or audio_in.get("sample_rate")
            or format_rate
        )
        if isinstance(rate, int) and not isinstance(rate, bool) and rate > 0:
            self.rate_hz = rate
        out, _ = parse_format(_declared_output_format(payload))
        if isinstance(out, str) and out.lower() in OUTPUT_FORMATS:
            self.output_fmt = (
                "pcm16" if out.lower() in {"pcm", "pcm_s16le", "s16le"} else out.lower()
            )

    def copy(self) -> InputDefaults:
        return InputDefaults(self.fmt, self.rate_hz, self.output_fmt)


def audio_format_object(fmt: str, rate_hz: int | None) -> dict[str, object]:
    if fmt in {"pcm16", "pcm_s16le", "s16le", "pcm"}:
        obj: dict[str, object] = {"type": "audio/pcm"}
    elif fmt in {"pcm_f32le", "g711_ulaw", "g711_alaw"}:
        obj = {"type": f"audio/{fmt}"}
    else:
        obj = {"type": "audio/wav"}
    if rate_hz is not None:
        obj["rate"] = rate_hz
    return obj


def realtime_session_payload(
    public: Mapping[str, object], defaults: InputDefaults
) -> dict[str, object]:
    """``realtime_events.py::realtime_session_payload``: GA defaults for created/updated."""
    payload = dict(public)
    payload.setdefault("object", "realtime.session")
    payload.setdefault("type", "realtime")
    payload.setdefault("input_audio_format", defaults.fmt)
    payload.setdefault("output_audio_format", defaults.output_fmt)
    payload.setdefault("modalities", payload.get("modalities") or ["text", "audio"])
    payload.setdefault(
        "output_modalities", payload.get("output_modalities") or payload.get("modalities")
    )
    payload.setdefault(
        "audio",
        {
            "input": {
                "format": audio_format_object(defaults.fmt, defaults.rate_hz),
                "sample_rate_hz": defaults.rate_hz,
            },
            "output": {"format": audio_format_object(defaults.output_fmt, None)},
        },
    )
    payload.setdefault("turn_detection", None)
    payload.setdefault("input_audio_transcription", None)
    payload.setdefault("tracing", None)
    return payload
