"""Read what a client declares in ``session.update``: audio formats and turn detection.

Both dialects are accepted: OpenAI GA (``session.audio.input.format {type, rate}``,
``session.audio.input.turn_detection``) and the older / vLLM-Omni flat form
(``input_audio_format`` + ``sample_rate_hz``, top-level ``turn_detection``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from shim import session_options
from shim.audio import PCM16, AudioFormat
from shim.audio_formats import MAX_RATE as MAX_RATE
from shim.audio_formats import MIN_RATE as MIN_RATE
from shim.audio_formats import SessionConfigError as SessionConfigError
from shim.audio_formats import parse_format, wire_format
from shim.g711 import G711_ENCODINGS, G711_RATE_HZ
from shim.native_session_object import native_session_object
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
            "idle_timeout_ms": None,
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
DEFAULT_FORMAT = AudioFormat(PCM16, 24000)  # OpenAI GA: audio/pcm at 24 kHz
DEFAULT_TURN = TurnDetection(VadParams())


@dataclass(frozen=True, slots=True)
class ClientSessionConfig:
    input_format: AudioFormat = DEFAULT_FORMAT
    output_format: AudioFormat = DEFAULT_FORMAT
    turn: TurnDetection = DEFAULT_TURN
    instructions: str | None = None
    # GA's audio.input.transcription / noise_reduction objects (``shim/session_options.py``).
    transcription: dict[str, Any] | None = None
    noise_reduction: dict[str, Any] | None = None
    native: bool = False  # a vLLM-Omni client's: G.711 at any rate, told in its shape


# vLLM-Omni's defaults: input at 16 kHz (``RealtimeInputDefaults``), no turn detection.
NATIVE_CONFIG = ClientSessionConfig(
    input_format=AudioFormat(PCM16, 16000), turn=TurnDetection(None), native=True
)


def _carried_rate(fmt: AudioFormat, native: bool = False) -> int | None:
    """The rate a new format without one keeps: none from G.711 (audio/pcm is then 24 kHz);
    a native client's output only from G.711 (vLLM-Omni's is 8 kHz unless declared)."""
    return fmt.rate_hz if (fmt.encoding in G711_ENCODINGS) == native else None


# turn_detection's numbers: (lowest, highest, whole numbers only).
_TD_NUMBERS: dict[str, tuple[float, float, bool]] = {
    "threshold": (0.0, 1.0, False),
    "prefix_padding_ms": (0, 10_000, True),
    "silence_duration_ms": (0, 10_000, True),
    "min_speech_duration_ms": (0, 10_000, True),
    "idle_timeout_ms": (0, 3_600_000, True),
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


def _turn_detection(raw: Any, base: TurnDetection, defaults: VadParams) -> TurnDetection:
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
    updates.pop("idle_timeout_ms", None)  # checked, but the proxy has no idle timeout
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
    )


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def apply_session_update(
    current: ClientSessionConfig, event: dict[str, Any], vad_defaults: VadParams
) -> ClientSessionConfig:
    """Return the config after a ``session.update``; raises SessionConfigError if invalid.

    Validates everything before changing anything, so a rejected update changes nothing.
    """
    session = event.get("session")
    if session is None:
        session = {k: v for k, v in event.items() if k not in ("type", "event_id")}
    if not isinstance(session, dict):
        raise SessionConfigError("invalid_value", "session must be an object", "session")
    audio = _obj(session.get("audio"))
    a_in, a_out = _obj(audio.get("input")), _obj(audio.get("output"))
    cfg = current
    in_spec = a_in.get("format", session.get("input_audio_format"))
    in_rate = a_in.get("sample_rate_hz", session.get("sample_rate_hz"))
    if in_spec is not None or in_rate is not None:
        kept = cfg.input_format.rate_hz if cfg.native else _carried_rate(cfg.input_format)
        cfg = replace(
            cfg,
            input_format=parse_format(
                in_spec if in_spec is not None else cfg.input_format.encoding,
                in_rate if in_rate is not None else kept,
                "audio.input.format",
                allow_f32=True,
                g711_rate=kept if cfg.native else None,
            ),
        )
    out_spec = a_out.get("format", session.get("output_audio_format"))
    out_rate = a_out.get("sample_rate_hz")
    if out_spec is not None or out_rate is not None:
        cfg = replace(
            cfg,
            output_format=parse_format(
                out_spec if out_spec is not None else cfg.output_format.encoding,
                out_rate if out_rate is not None else _carried_rate(cfg.output_format, cfg.native),
                "audio.output.format",
                allow_f32=False,
                g711_rate=G711_RATE_HZ if cfg.native else None,
            ),
        )
    if "turn_detection" in a_in:
        cfg = replace(cfg, turn=_turn_detection(a_in["turn_detection"], cfg.turn, vad_defaults))
    elif "turn_detection" in session:
        cfg = replace(cfg, turn=_turn_detection(session["turn_detection"], cfg.turn, vad_defaults))
    if isinstance(session.get("instructions"), str):
        cfg = replace(cfg, instructions=session["instructions"])
    session_options.check_session_type(session, cfg.native)
    session_options.check_modalities(session)
    for name in session_options.INPUT_OPTIONS:
        value = session_options.input_option(session, a_in, name)
        if not session_options.is_unset(value):
            cfg = replace(cfg, **{name: value})
    return cfg


def session_object(session_id: str, model: str, cfg: ClientSessionConfig) -> dict[str, Any]:
    """The GA session object as this proxy serves it (for session.created / updated);
    a native client's in vLLM-Omni's shape (``shim/native_session_object.py``)."""
    if cfg.native:
        io, turn, text = (cfg.input_format, cfg.output_format), cfg.turn.as_wire(), cfg.instructions
        return native_session_object(session_id, model, io, turn, text, cfg.transcription)

    def fmt(f: AudioFormat) -> dict[str, Any]:
        return wire_format(f.encoding, f.rate_hz)

    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": session_id,
        "model": model,
        "output_modalities": ["audio"],
        "instructions": cfg.instructions or "",
        "audio": {
            "input": {
                "format": fmt(cfg.input_format),
                "transcription": cfg.transcription,
                "noise_reduction": cfg.noise_reduction,
                "turn_detection": cfg.turn.as_wire(),
            },
            "output": {"format": fmt(cfg.output_format)},
        },
    }
