"""The turn detection vLLM-Omni refuses in a native client's session object.

vLLM-Omni 0.30.0 runs only ``server_vad`` (or none: ``null``), with its own fields,
``interrupt_response`` true, and an ``overlap_policy`` that agrees
(``engine/duplex/turn_detection.py``, ``validate_realtime_turn_detection``): anything
else it refuses, ``unsupported_turn_detection`` in these words. A native client's
update is refused so by the proxy too where the proxy answers for the upstream, and
left unapplied for the upstream to refuse where it relays (docs/protocol.md, "Native
clients"). The proxy's own overlap fields (``barge_in_decision_ms``,
``overlap_events``) are the proxy's to take and never reach an upstream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

CODE = "unsupported_turn_detection"
SERVER_VAD_FIELDS = frozenset(
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
PROXY_FIELDS = frozenset({"barge_in_decision_ms", "overlap_events"})
# What vLLM-Omni fills a declared ``server_vad`` object with, in its order: the object
# it runs and tells is these with the declared fields over them, ``create_response``
# only where declared (``normalize_turn_detection_session_payload``).
SERVER_VAD_DEFAULTS: dict[str, Any] = {
    "type": "server_vad",
    "interrupt_response": True,
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "min_speech_duration_ms": 96,
}
# Silero's floor in vLLM-Omni (``engine/duplex/vad.py``, ``SILERO_VAD_MIN_THRESHOLD``).
_MIN_THRESHOLD = 0.15


def _number(value: object, minimum: float, strict: bool = False, top: float | None = None) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return False
    above = value > minimum if strict else value >= minimum
    return above and (top is None or value <= top)


def _selected(session: Mapping[str, Any]) -> tuple[str | None, Any]:
    field = "turn_detection" if "turn_detection" in session else None
    selected = session.get("turn_detection")
    audio = session.get("audio")
    a_in = audio.get("input") if isinstance(audio, dict) else None
    if isinstance(a_in, dict) and "turn_detection" in a_in:
        field, selected = "audio.input.turn_detection", a_in["turn_detection"]
    return field, selected


def declared(session: Mapping[str, Any]) -> tuple[bool, Any]:
    """Whether a session object names turn detection, and the one vLLM-Omni reads
    (``audio.input.turn_detection`` before the flat one)."""
    field, td = _selected(session)
    return field is not None, td


def as_run(td: Any) -> dict[str, Any] | None:
    """A declared turn detection (a valid one) as vLLM-Omni runs and tells it."""
    return {**SERVER_VAD_DEFAULTS, **td} if isinstance(td, dict) else None


def turn_refusal(ev: Mapping[str, Any]) -> str | None:
    """vLLM-Omni's words refusing a ``session.update``'s turn detection, or None."""
    nested = ev.get("session")
    session: Mapping[str, Any] = nested if isinstance(nested, dict) else ev
    field, td = _selected(session)
    policy = session.get("overlap_policy")
    if field is None:
        if policy == "barge_in_on_speech":
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
        unknown = sorted(set(td) - SERVER_VAD_FIELDS - PROXY_FIELDS)
        if unknown:
            return f"Unknown {field} field(s): {', '.join(unknown)}"
        if not _number(td.get("threshold", 0.5), _MIN_THRESHOLD, strict=True, top=1):
            return f"{field}.threshold must be greater than {_MIN_THRESHOLD} and at most 1"
        for name in ("prefix_padding_ms", "silence_duration_ms", "min_speech_duration_ms"):
            value = td.get(name)
            if value is not None and not _number(value, 0):
                return f"{field}.{name} must be a non-negative number"
        if td.get("interrupt_response", True) is not True:
            return (
                f"{field}.interrupt_response=false is unsupported; "
                "use turn_detection=null for model-owned listen/speak"
            )
    desired = "barge_in_on_speech" if td is not None else "listen_only"
    if isinstance(policy, str) and policy != desired:
        return f"overlap_policy={policy!r} conflicts with turn_detection; expected {desired!r}"
    return None
