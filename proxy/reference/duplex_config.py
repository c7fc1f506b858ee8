"""A duplex session's settings: opened from the first session object, changed by updates.

Follows ``engine/duplex/config.py::DuplexSessionConfig`` (``from_realtime`` /
``apply_realtime_update``) for the fields that reach the wire.  Open-time
validation errors all surface as ``invalid_session_config`` (quirk 6); live
updates keep their own codes.
"""

from __future__ import annotations

from collections.abc import Mapping

from proxy.reference.duplex_turn_detection import normalize_turn_detection, validate_session_object
from proxy.reference.model_profiles import open_refusal
from proxy.reference.options import ReferenceOptions

#: Keys of ``as_public_dict`` a client key of the same name never overrides.
_PUBLIC_KEYS = (
    "id",
    "state",
    "turn_state",
    "epoch",
    "turn_id",
    "active_request_id",
    "active_response_id",
    "active_response_turn_id",
    "model",
    "modalities",
    "instructions",
    "voice",
    "response_format",
    "temperature",
    "max_tokens",
    "speed",
    "idle_timeout_s",
    "overlap_policy",
    "overlap_short_ack_ms",
    "overlap_barge_in_ms",
    "overlap_silence_rms",
    "playback_commit_policy",
    "playback",
    "capabilities",
)


class ConfigError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _max_tokens(payload: Mapping[str, object]) -> object:
    for key in ("max_response_output_tokens", "max_output_tokens", "max_tokens"):
        if key in payload:
            value = payload[key]
            return None if value == "inf" else value
    return None


def _instructions(patch: Mapping[str, object], current: object) -> object:
    """The instructions after ``patch``: a string or ``null`` replaces them, else kept."""
    value = patch.get("instructions")
    if isinstance(value, str) or ("instructions" in patch and value is None):
        return value
    return current


def _voice(payload: Mapping[str, object]) -> object:
    voice = payload.get("voice")
    if isinstance(voice, str):
        return voice
    audio = payload.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    return output.get("voice") if isinstance(output, dict) else None


class SessionSettings:
    """The configurable half of the public session object."""

    def __init__(
        self,
        payload: Mapping[str, object],
        *,
        kind: str,
        options: ReferenceOptions,
        served_model: str | None,
    ) -> None:
        client = {k: v for k, v in payload.items() if k != "extra_body"}
        rejection = validate_session_object(client)
        if rejection is not None:
            raise ConfigError("invalid_session_config", rejection[1])
        model = client.get("model")
        checks_name = not options.strict("ignore_model_name")
        if (
            checks_name
            and isinstance(model, str)
            and served_model is not None
            and model != served_model
        ):
            raise ConfigError("model_not_found", f"The model `{model}` does not exist.")
        normalize_turn_detection(client)
        self.client = client
        self.model: object = model if isinstance(model, str) else served_model
        modalities = client.get("modalities") or client.get("output_modalities")
        self.modalities: list[object] = (
            list(modalities) if isinstance(modalities, list) else ["text", "audio"]
        )
        self.instructions: object = client.get("instructions")
        seeded = client.get("initial_user_text")
        #: A seeded opening turn, a user item waiting for an answer from the start.
        self.seeded_items = int(isinstance(seeded, str) and bool(seeded))
        self.voice: object = _voice(client)
        self.temperature: object = client.get("temperature")
        self.max_tokens: object = _max_tokens(client)
        self.speed: object = client.get("speed")
        idle = client.get("idle_timeout_s")
        self.idle_timeout_s = (
            float(idle) if isinstance(idle, int | float) and idle > 0 else options.idle_timeout_s
        )
        policy = client.get("overlap_policy")
        self.overlap_policy = policy if isinstance(policy, str) else "listen_only"
        self.overlap_short_ack_ms = _int(client.get("overlap_short_ack_ms"), 700)
        self.overlap_barge_in_ms = _int(client.get("overlap_barge_in_ms"), 1200)
        rms = client.get("overlap_silence_rms")
        self.overlap_silence_rms = float(rms) if isinstance(rms, int | float) else 0.003
        extra = payload.get("extra_body")
        self.extra_body: dict[str, object] = dict(extra) if isinstance(extra, dict) else {}
        self._checked_model = options.open_checks_for(kind)

    def check_model_fields(self) -> None:
        """The model plugin's own open requirements (run after admission, as manager.py does)."""
        if self._checked_model is None:
            return
        payload = {**self.client, "extra_body": self.extra_body}
        refusal = open_refusal(self._checked_model, payload, self.modalities)
        if refusal is not None:
            raise ConfigError(*refusal)

    @property
    def auto_response(self) -> bool:
        """``extra_body.auto_response``: commits answer without ``response_create``."""
        return self.extra_body.get("auto_response") is True

    @property
    def server_vad(self) -> bool:
        """``turn_detection.type = "server_vad"`` (normalised to an object or absent/None)."""
        return isinstance(self.client.get("turn_detection"), dict)

    @property
    def prefix_padding_ms(self) -> int:
        """The detector's ``prefix_padding_ms`` (``engine/duplex/turn_detection.py``,
        ``from_realtime``: 300 unless the turn detection object names it)."""
        td = self.client.get("turn_detection")
        padding = td.get("prefix_padding_ms", 300) if isinstance(td, dict) else 300
        return int(padding) if isinstance(padding, int | float) else 300

    def update(
        self, patch: Mapping[str, object], *, audio_started: bool, locked: bool = False
    ) -> None:
        """Apply a live ``session.update`` (already format/turn-detection validated).

        ``locked``: the model has taken input (a turn, or an auto-responding session's
        chunk: its context is locked), so the instructions it was primed with can no
        longer change (``session/control.py``, ``on_session_update``;
        ``session/append_task.py`` locks it on the first accepted append): an update
        changing them is refused whole, one restating them is not.
        """
        model = patch.get("model")
        if isinstance(model, str) and self.model is not None and model != self.model:
            raise ConfigError(
                "model_update_unsupported",
                "session.update cannot change model for an open realtime duplex session",
            )
        voice = _voice(patch)
        if isinstance(voice, str) and audio_started:
            raise ConfigError(
                "voice_update_after_audio_unsupported",
                "session.update cannot change voice after audio output has started",
            )
        if isinstance(patch.get("ref_audio"), str):
            raise ConfigError(
                "ref_audio_update_unsupported",
                "session.update cannot change ref_audio after the session is open",
            )
        instructions = _instructions(patch, self.instructions)
        if locked and instructions != self.instructions:
            raise ConfigError(
                "instructions_update_unsupported",
                "session.update cannot change instructions after the native duplex context"
                " is initialized",
            )
        extra = patch.get("extra_body")
        if isinstance(extra, dict):
            self.extra_body.update(extra)
        merged = dict(self.client)
        merged.update({k: v for k, v in patch.items() if k != "extra_body"})
        normalize_turn_detection(merged)
        self.client = merged
        if isinstance(model, str):
            self.model = model
        self.instructions = instructions
        if isinstance(voice, str):
            self.voice = voice
        modalities = patch.get("modalities") or patch.get("output_modalities")
        if isinstance(modalities, list):
            self.modalities = list(modalities)
        for key in ("temperature", "speed"):
            if key in patch:
                setattr(self, key, patch[key])
        if any(
            k in patch for k in ("max_response_output_tokens", "max_output_tokens", "max_tokens")
        ):
            self.max_tokens = _max_tokens(patch)
        idle = patch.get("idle_timeout_s")
        if isinstance(idle, int | float) and idle > 0:
            self.idle_timeout_s = float(idle)
        policy = merged.get("overlap_policy")
        if isinstance(policy, str):
            self.overlap_policy = policy

    def public(self, runtime: Mapping[str, object]) -> dict[str, object]:
        """``as_public_dict``: runtime state + settings + every other client key, in order."""
        payload: dict[str, object] = {
            "id": runtime["id"],
            "state": runtime["state"],
            "turn_state": runtime["turn_state"],
            "epoch": runtime["epoch"],
            "turn_id": runtime["turn_id"],
            "active_request_id": runtime["active_request_id"],
            "active_response_id": runtime["active_response_id"],
            "active_response_turn_id": runtime["active_response_turn_id"],
            "model": self.model,
            "modalities": list(self.modalities),
            "instructions": self.instructions,
            "voice": self.voice,
            "response_format": "pcm",
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "speed": self.speed,
            "idle_timeout_s": self.idle_timeout_s,
            "overlap_policy": self.overlap_policy,
            "overlap_short_ack_ms": self.overlap_short_ack_ms,
            "overlap_barge_in_ms": self.overlap_barge_in_ms,
            "overlap_silence_rms": self.overlap_silence_rms,
            "playback_commit_policy": "ack_only",
            "playback": runtime["playback"],
            "capabilities": runtime["capabilities"],
        }
        for key, value in self.client.items():
            if key not in _PUBLIC_KEYS:
                payload[key] = value
        return payload


def _int(value: object, default: int) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
