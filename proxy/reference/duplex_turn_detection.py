"""``turn_detection`` of a session object: validation and the ``server_vad`` defaults.

Follows ``engine/duplex/turn_detection.py``: ``null`` means model-owned
listen/speak (``overlap_policy`` ``listen_only``), an object must be
``server_vad`` and drives ``barge_in_on_speech``.
"""

from __future__ import annotations

from collections.abc import Mapping

from proxy.reference.duplex_formats import audio_part, format_error

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
    audio_in = audio_part(payload, "input")
    if "turn_detection" in audio_in:
        field, selected = "audio.input.turn_detection", audio_in["turn_detection"]
    return field, selected


def names_turn_detection(payload: Mapping[str, object]) -> bool:
    """Whether a session object names ``turn_detection`` (either spelling)."""
    return _turn_detection_field(payload)[0] is not None


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
    message = format_error(payload)
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
