"""Turn detection as a client declares it in ``session.update``, read and checked.

GA's ``server_vad`` and ``semantic_vad`` objects (``semantic_vad`` runs the proxy's VAD
with its end-of-turn silence set by the eagerness), with the proxy's extensions
(``docs/protocol.md``, "Overlap protocol"); ``null`` is push-to-talk. Every number is
checked before anything changes: a refused update changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from shim.audio_formats import SessionConfigError
from shim.vad_gate import VadParams

_TD_KEYS = {
    "type",
    "threshold",
    "prefix_padding_ms",
    "silence_duration_ms",
    "create_response",
    "interrupt_response",
    "idle_timeout_ms",
    "min_speech_duration_ms",
    "eagerness",
    # Extensions (docs/protocol.md, "Overlap protocol"):
    "barge_in_decision_ms",
    "overlap_events",
}


@dataclass(frozen=True, slots=True)
class TurnDetection:
    """``None`` vad means push-to-talk: the client commits turns itself."""

    vad: VadParams | None
    create_response: bool = True
    interrupt_response: bool = True
    # How long after its onset speech over the assistant is judged barge-in or not;
    # None: the proxy's default (ShimSettings.barge_in_decision_ms).
    barge_in_decision_ms: int | None = None
    # The client wants output_audio_buffer.paused / resumed around undecided overlaps.
    overlap_events: bool = False
    # GA semantic_vad's eagerness; None: server_vad (``SEMANTIC_SILENCE_MS``).
    eagerness: str | None = None
    # GA server_vad's idle_timeout_ms: a response after this long without user speech
    # (``shim/idle_timeout.py``); None: off. Kept only where the proxy takes the turns.
    idle_timeout_ms: int | None = None

    def as_wire(self) -> dict[str, Any] | None:
        if self.vad is None:
            return None
        wire: dict[str, Any] = {
            "type": "server_vad",
            "threshold": self.vad.threshold,
            "prefix_padding_ms": self.vad.prefix_padding_ms,
            "silence_duration_ms": self.vad.silence_duration_ms,
            "min_speech_duration_ms": self.vad.min_speech_ms,
            "create_response": self.create_response,
            "interrupt_response": self.interrupt_response,
            "idle_timeout_ms": self.idle_timeout_ms,
        }
        if self.eagerness is not None:  # GA's semantic_vad object, and only its fields
            wire = {"type": "semantic_vad", "eagerness": self.eagerness} | {
                k: wire[k] for k in ("create_response", "interrupt_response")
            }
        # The extensions only when a client set them: a GA client sees GA fields.
        if self.barge_in_decision_ms is not None:
            wire["barge_in_decision_ms"] = self.barge_in_decision_ms
        if self.overlap_events:
            wire["overlap_events"] = True
        return wire


# semantic_vad without a semantic model: the proxy's VAD, its end-of-turn silence set
# by the eagerness (GA: low waits longest, high answers soonest; auto is medium).
SEMANTIC_SILENCE_MS = {"low": 1000, "medium": 500, "auto": 500, "high": 250}


IDLE_TIMEOUT_MIN_MS, IDLE_TIMEOUT_MAX_MS = 5_000, 30_000

# turn_detection's numbers: (lowest, highest, whole numbers only).
_TD_NUMBERS: dict[str, tuple[float, float, bool]] = {
    "threshold": (0.0, 1.0, False),
    "prefix_padding_ms": (0, 10_000, True),
    "silence_duration_ms": (0, 10_000, True),
    "min_speech_duration_ms": (0, 10_000, True),
    # GA's range (its API reference: minimum 5000, maximum 30000).
    "idle_timeout_ms": (IDLE_TIMEOUT_MIN_MS, IDLE_TIMEOUT_MAX_MS, True),
    "barge_in_decision_ms": (100, 3_000, True),
}


def _number(value: Any, field: str, lo: float, hi: float, whole: bool) -> float | int:
    """A finite number in [lo, hi] (a whole one if ``whole``), else invalid_value."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SessionConfigError("invalid_value", f"{field} must be a number", field)
    if whole and value != int(value):
        raise SessionConfigError("invalid_value", f"{field} must be a whole number", field)
    if not lo <= value <= hi:
        raise SessionConfigError("invalid_value", f"{field} must be {lo}..{hi}", field)
    return int(value) if whole else float(value)


def parse_turn_detection(raw: Any, base: TurnDetection, defaults: VadParams) -> TurnDetection:
    if raw is None:
        return TurnDetection(
            None,
            base.create_response,
            base.interrupt_response,
            base.barge_in_decision_ms,
            base.overlap_events,
        )
    if not isinstance(raw, dict):
        raise SessionConfigError(
            "invalid_value", "turn_detection must be an object or null", "turn_detection"
        )
    unknown = set(raw) - _TD_KEYS
    if unknown:
        raise SessionConfigError(
            "invalid_value",
            f"turn_detection: unknown keys {sorted(unknown)}",
            "turn_detection",
        )
    kind = raw.get("type", "server_vad")
    if kind not in ("server_vad", "semantic_vad"):
        raise SessionConfigError(
            "unsupported_turn_detection",
            f"turn_detection type {kind!r} is not supported",
            "turn_detection",
        )
    vad = base.vad or defaults
    eagerness = raw.get("eagerness", "auto") if kind == "semantic_vad" else None
    if eagerness is not None and (
        not isinstance(eagerness, str) or eagerness not in SEMANTIC_SILENCE_MS
    ):
        msg = f"turn_detection.eagerness must be one of {sorted(SEMANTIC_SILENCE_MS)}"
        raise SessionConfigError("invalid_value", msg, "turn_detection.eagerness")
    updates: dict[str, Any] = {}
    if eagerness is not None and "silence_duration_ms" not in raw:
        updates["silence_duration_ms"] = SEMANTIC_SILENCE_MS[eagerness]
    for key, (lo, hi, whole) in _TD_NUMBERS.items():
        value = raw.get(key)
        if value is not None:
            updates[key] = _number(value, f"turn_detection.{key}", lo, hi, whole)
    if "threshold" in updates and not 0.0 < updates["threshold"] < 1.0:
        raise SessionConfigError(
            "invalid_value",
            "turn_detection.threshold must be in (0, 1)",
            "turn_detection.threshold",
        )
    idle = updates.pop(
        "idle_timeout_ms", None if "idle_timeout_ms" in raw else base.idle_timeout_ms
    )
    if eagerness is not None and idle is not None:
        if raw.get("idle_timeout_ms") is not None:  # GA: "only supported for server_vad mode"
            msg = "turn_detection.idle_timeout_ms is only supported with server_vad"
            raise SessionConfigError("invalid_value", msg, "turn_detection.idle_timeout_ms")
        idle = None  # a server_vad's timeout does not carry over to semantic_vad
    decision_ms = updates.pop("barge_in_decision_ms", base.barge_in_decision_ms)
    overlap_events = raw.get("overlap_events", base.overlap_events)
    if not isinstance(overlap_events, bool):
        raise SessionConfigError(
            "invalid_value",
            "turn_detection.overlap_events must be a boolean",
            "turn_detection.overlap_events",
        )
    if "min_speech_duration_ms" in updates:
        updates["min_speech_ms"] = updates.pop("min_speech_duration_ms")
    flags = {}
    for key in ("create_response", "interrupt_response"):
        value = raw.get(key)
        if value is not None and not isinstance(value, bool):
            raise SessionConfigError(
                "invalid_value", f"turn_detection.{key} must be a boolean", f"turn_detection.{key}"
            )
        flags[key] = base.create_response if value is None and key == "create_response" else value
    return TurnDetection(
        vad=replace(vad, **updates),
        create_response=True
        if flags["create_response"] is None
        else bool(flags["create_response"]),
        interrupt_response=True
        if flags["interrupt_response"] is None
        else bool(flags["interrupt_response"]),
        barge_in_decision_ms=decision_ms,
        overlap_events=overlap_events,
        eagerness=eagerness,
        idle_timeout_ms=idle,
    )
