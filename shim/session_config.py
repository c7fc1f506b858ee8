"""Read what a client declares in ``session.update``: audio formats and turn detection.

Both dialects are accepted: OpenAI GA (``session.audio.input.format {type, rate}``,
``session.audio.input.turn_detection``) and the older / vLLM-Omni flat form
(``input_audio_format`` + ``sample_rate_hz``, top-level ``turn_detection``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from shim import session_options, session_told
from shim.audio import PCM16, AudioFormat
from shim.audio_formats import MAX_RATE as MAX_RATE
from shim.audio_formats import MIN_RATE as MIN_RATE
from shim.audio_formats import SessionConfigError as SessionConfigError
from shim.audio_formats import parse_format, wire_format
from shim.g711 import G711_ENCODINGS, G711_RATE_HZ
from shim.native_session_object import native_session_object
from shim.native_turns import declared
from shim.turn_detection_config import TurnDetection as TurnDetection
from shim.turn_detection_config import parse_turn_detection
from shim.vad_gate import VadParams

DEFAULT_FORMAT = AudioFormat(PCM16, 24000)  # OpenAI GA: audio/pcm at 24 kHz
DEFAULT_TURN = TurnDetection(VadParams())
UNSUPPORTED = session_options.UNSUPPORTED
IDLE_PARAM = "session.audio.input.turn_detection.idle_timeout_ms"
IDLE_MESSAGE = (
    "turn_detection.idle_timeout_ms is not served here: the upstream takes the turns and "
    "has no idle timeout; the rest of the update applies"
)


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
    # The generation settings in effect that a GA session object tells back, where the
    # mode knows them whatever the client asks (``shim/session_told.py``).
    told: Mapping[str, Any] | None = None


# vLLM-Omni's defaults: input at 16 kHz (``RealtimeInputDefaults``), no turn detection.
NATIVE_CONFIG = ClientSessionConfig(
    input_format=AudioFormat(PCM16, 16000), turn=TurnDetection(None), native=True
)


def _carried_rate(fmt: AudioFormat, native: bool = False) -> int | None:
    """The rate a new format without one keeps: none from G.711 (audio/pcm is then 24 kHz);
    a native client's output only from G.711 (vLLM-Omni's is 8 kHz unless declared)."""
    return fmt.rate_hz if (fmt.encoding in G711_ENCODINGS) == native else None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _session(event: dict[str, Any]) -> Any:
    """What an update sets: its ``session``, else (the flat form) its own fields."""
    session = event.get("session")
    if session is None:
        return {k: v for k, v in event.items() if k not in ("type", "event_id")}
    return session


def apply_session_update(
    current: ClientSessionConfig,
    event: dict[str, Any],
    vad_defaults: VadParams,
    idle_timeouts: bool = True,
) -> ClientSessionConfig:
    """Return the config after a ``session.update``; raises SessionConfigError if invalid.

    Validates everything before changing anything, so a rejected update changes nothing.
    Without ``idle_timeouts`` (the upstream takes the turns, and has no idle timeout)
    GA's ``idle_timeout_ms`` is checked but not kept: the caller refuses that field
    alone (``idle_timeout_asked``) and the rest of the update applies.
    """
    session = _session(event)
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
    named, td = declared(session)
    if named:
        cfg = replace(cfg, turn=parse_turn_detection(td, cfg.turn, vad_defaults))
    if not idle_timeouts and cfg.turn.idle_timeout_ms is not None:
        cfg = replace(cfg, turn=replace(cfg.turn, idle_timeout_ms=None))
    if isinstance(session.get("instructions"), str):
        cfg = replace(cfg, instructions=session["instructions"])
    if cfg.told is not None and session.get("tool_choice", "") in (None, "auto", "none"):
        # What a mode that takes no tools tells of the tool choice: as given (null: GA's).
        cfg = replace(cfg, told={**cfg.told, "tool_choice": session["tool_choice"] or "auto"})
    session_options.check_session_type(session, cfg.native)
    session_options.check_modalities(session)
    session_options.check_field_types(session, cfg.native)
    session_options.check_max_output_tokens(session, cfg.native)
    for name in session_options.INPUT_OPTIONS:
        value = session_options.input_option(session, a_in, name)
        if not session_options.is_unset(value):
            cfg = replace(cfg, **{name: value})
    return cfg


def idle_timeout_asked(event: dict[str, Any]) -> bool:
    """Whether a ``session.update`` asks for an idle timeout (a non-null
    ``idle_timeout_ms`` in the turn detection it sets, read as ``apply_session_update``
    reads it): refused alone where the upstream takes the turns (``IDLE_PARAM``)."""
    session = _session(event)
    turn = declared(session)[1] if isinstance(session, dict) else None
    return isinstance(turn, dict) and turn.get("idle_timeout_ms") is not None


def session_object(
    session_id: str, model: str, cfg: ClientSessionConfig, told: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The GA session object as this proxy serves it (for session.created / updated),
    with the generation settings in effect (``told``, else the config's:
    ``shim/session_told.py``); a native client's in vLLM-Omni's shape
    (``shim/native_session_object.py``)."""
    if cfg.native:
        io, turn, text = (cfg.input_format, cfg.output_format), cfg.turn.as_wire(), cfg.instructions
        return native_session_object(session_id, model, io, turn, text, cfg.transcription)

    def fmt(f: AudioFormat) -> dict[str, Any]:
        return wire_format(f.encoding, f.rate_hz)

    told = told if told is not None else cfg.told
    session = {
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
    return session if told is None else session_told.merged(session, told)
