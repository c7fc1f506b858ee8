"""Tunables of the reference backends (stand-ins for vLLM-Omni 0.30.0).

``fidelity`` is the preset: ``"strict"`` behaves like the real server where
a client can tell the difference (``docs/fidelity.md`` lists each behaviour
and its switch), ``"lenient"`` keeps the forgiving behaviour the stand-ins
had first.  Every strict behaviour also has its own flag; a flag left
``None`` follows the preset.

Defaults follow the real server where it has a number (``disconnect_grace_s``,
replay TTL and byte cap, first-message timeout, idle timeout: vLLM-Omni's
``DuplexSessionRuntimeConfig`` and ``serving.py``) and the model presets it
ships (MiniCPM-o 4.5 speaks 24 kHz, Nemotron VoiceChat 22.05 kHz in 80 ms
frames).  The rest describe the stand-in "model" (its turn detector and its
reply) and the fault switches a probe uses to prove its checks can fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proxy.reference.model_profiles import MINICPMO, NEMOTRON, PROFILES, ModelProfile

KIND_DUPLEX = "duplex"
KIND_NO_BARGE_IN = "duplex-no-barge-in"
KIND_TURN = "turn"
KINDS = (KIND_DUPLEX, KIND_NO_BARGE_IN, KIND_TURN)

#: response.cancel / barge-in is acknowledged on the wire but the audio keeps flowing.
FAULT_IGNORE_CANCEL = "ignore_cancel"
#: session.resume replays every journaled event twice.
FAULT_REPLAY_DUPLICATES = "replay_duplicates"
#: session.resume silently skips one journaled event.
FAULT_REPLAY_DROPS = "replay_drops"
#: input audio is ignored while the assistant owns the turn (no barge-in, no overlap turn).
FAULT_DEAF_WHILE_SPEAKING = "deaf_while_speaking"
#: conversation.item.truncate answers ``truncated`` but the transcript is not cut.
FAULT_IGNORE_TRUNCATE = "ignore_truncate"
#: a client that stops reading is never closed; its outbound queue grows without bound.
FAULT_UNBOUNDED_BUFFER = "unbounded_buffer"
#: only the oldest live session gets reply audio; the others wait until it ends.
FAULT_STARVE_SESSIONS = "starve_sessions"

FAULTS = frozenset(
    {
        FAULT_IGNORE_CANCEL,
        FAULT_REPLAY_DUPLICATES,
        FAULT_REPLAY_DROPS,
        FAULT_DEAF_WHILE_SPEAKING,
        FAULT_IGNORE_TRUNCATE,
        FAULT_UNBOUNDED_BUFFER,
        FAULT_STARVE_SESSIONS,
    }
)

FIDELITY_STRICT = "strict"
FIDELITY_LENIENT = "lenient"
FIDELITIES = (FIDELITY_STRICT, FIDELITY_LENIENT)

#: The flags a preset sets (each ``bool | None`` on ReferenceOptions).
STRICT_FLAGS = (
    "strict_ack_ownership",
    "vad_only_turns",
    "commit_needs_request",
    "opt_in_barge_in",
    "require_model_extras",
    "ignore_model_name",
    "model_input_units",
    "vad_reset_on_update",
    "lock_instructions_after_input",
)

_CHUNK_MS = {KIND_DUPLEX: 200, KIND_NO_BARGE_IN: 80, KIND_TURN: 100}
_OUTPUT_RATE_HZ = {KIND_DUPLEX: 24000, KIND_NO_BARGE_IN: 22050, KIND_TURN: 24000}


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown reference backend kind {kind!r}; expected one of {KINDS}")
    return kind


@dataclass(frozen=True, slots=True)
class ReferenceOptions:
    """Everything a reference backend can be tuned with; ``None`` means the kind's default."""

    #: Length of one reply audio chunk (also ``capabilities.chunk_period_ms``).
    chunk_ms: int | None = None
    #: Sample rate of reply audio (``sample_rate_hz`` on every delta).
    output_rate_hz: int | None = None
    #: A detached duplex session lives this long waiting for session.resume.
    disconnect_grace_s: float = 30.0
    #: Replay journal bounds (``resume_replay_ttl_s`` / ``resume_replay_max_bytes_per_session``).
    replay_ttl_s: float = 60.0
    replay_max_bytes: int = 8 * 1024 * 1024
    #: How long a duplex connection waits for its first message.
    config_timeout_s: float = 10.0
    #: Per-connection receive idle timeout when the session sets none.
    idle_timeout_s: float = 300.0
    #: Model-native end of turn: this much silence after speech ends the user turn.
    silence_ms: int = 500
    #: Speech needed (audio time) before the stand-in model counts a user turn as started.
    min_speech_ms: int = 100
    #: Kind "duplex": overlapping speech needed to barge in on its own playback.
    barge_in_overlap_ms: int = 300
    #: Speech detector: band (250-3500 Hz) RMS floor, SNR over the tracked noise floor,
    #: and the spectral-flatness ceiling that keeps white/pink noise and hum out.
    speech_band_rms: float = 0.006
    speech_snr: float = 3.0
    speech_max_flatness: float = 0.25
    #: The server's own no-VAD rule (``overlap_silence_rms``): an append is "speech"
    #: when the RMS of its float samples reaches this (used for explicit commits).
    append_speech_rms: float = 0.003
    #: Reported as ``capabilities.target_barge_in_latency_ms`` by kind "duplex".
    target_barge_in_latency_ms: int = 400
    #: ``"strict"`` or ``"lenient"``: the default of every flag below left ``None``.
    fidelity: str = FIDELITY_STRICT
    #: Ack-only turn ownership exactly like vLLM-Omni: the assistant owns the turn while
    #: ``sent_ms > committed_ms`` even for a client that never acks, and a commit in that
    #: time is only acknowledged.  Lenient: a client that never sends playback.ack is
    #: taken to play in real time.
    strict_ack_ownership: bool | None = None
    #: Speech events, VAD commits and VAD-driven answers only under
    #: ``turn_detection.type = "server_vad"``.  Lenient: the model detects turns always.
    vad_only_turns: bool | None = None
    #: A client commit answers only with ``response_create`` or
    #: ``extra_body.auto_response``.  Lenient: a bare commit is answered.
    commit_needs_request: bool | None = None
    #: Barge-in only under ``overlap_policy = "barge_in_on_speech"`` (server VAD); the
    #: default ``listen_only`` buffers overlap as the next turn.  Lenient: kind "duplex"
    #: barges in on any overlapping speech.
    opt_in_barge_in: bool | None = None
    #: Enforce the model's open requirements (``model_profiles.py``).  With the generic
    #: profile an explicit True checks the kind's model (MiniCPM-o for "duplex",
    #: Nemotron for "duplex-no-barge-in").
    require_model_extras: bool | None = None
    #: Accept any model name at open, as the real server does.  Lenient: a
    #: ``served_model`` refuses other names with ``model_not_found``.
    ignore_model_name: bool | None = None
    #: PersonaPlex hands its model one 80 ms unit per append through its input buffer
    #: (``personaplex_frames.py``).  Lenient: the model takes every append as it comes.
    model_input_units: bool | None = None
    #: A ``session.update`` naming ``turn_detection`` replaces the speech detector at
    #: once: speech being heard is lost and its clock restarts.  Lenient: it hears on.
    vad_reset_on_update: bool | None = None
    #: Once the model has taken in audio, a ``session.update`` changing the instructions
    #: is refused whole (``instructions_update_unsupported``).  Lenient: it applies.
    lock_instructions_after_input: bool | None = None
    #: Live sessions (a detached one in its grace included) before an open is refused
    #: with ``resource_exhausted``; ``None``: 1 when strict, unlimited when lenient.
    max_sessions: int | None = None
    #: The model being warmed up: WebSocket upgrades are held this long after start.
    warmup_s: float = 0.0
    #: The model the duplex kinds stand in for (``model_profiles.PROFILES``).
    profile: str = "generic"
    #: Outbound bytes queued for one socket before a non-reading client is dropped.
    max_outbound_bytes: int = 4 * 1024 * 1024
    faults: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        unknown = set(self.faults) - FAULTS
        if unknown:
            raise ValueError(f"unknown reference faults {sorted(unknown)}; known: {sorted(FAULTS)}")
        for name in ("chunk_ms", "output_rate_hz"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive")
        if self.disconnect_grace_s <= 0 or self.replay_ttl_s <= 0 or self.replay_max_bytes <= 0:
            raise ValueError("grace, replay ttl and replay bytes must be positive")
        if self.fidelity not in FIDELITIES:
            raise ValueError(f"fidelity must be one of {FIDELITIES}, not {self.fidelity!r}")
        if self.max_sessions is not None and self.max_sessions <= 0:
            raise ValueError("max_sessions must be positive")
        if self.warmup_s < 0:
            raise ValueError("warmup_s must not be negative")
        if self.profile not in PROFILES:
            raise ValueError(f"unknown profile {self.profile!r}; known: {sorted(PROFILES)}")

    def strict(self, flag: str) -> bool:
        """A strict behaviour's switch: its flag if set, else the ``fidelity`` preset."""
        if flag not in STRICT_FLAGS:
            raise ValueError(f"unknown strict flag {flag!r}")
        value: bool | None = getattr(self, flag)
        return self.fidelity == FIDELITY_STRICT if value is None else value

    @property
    def session_limit(self) -> int | None:
        if self.max_sessions is not None:
            return self.max_sessions
        return 1 if self.fidelity == FIDELITY_STRICT else None

    def chunk_ms_for(self, kind: str) -> int:
        if self.chunk_ms is not None:
            return self.chunk_ms
        return self.model_profile.chunk_ms or _CHUNK_MS[check_kind(kind)]

    @property
    def model_profile(self) -> ModelProfile:
        return PROFILES[self.profile]

    def barge_in_for(self, kind: str) -> bool:
        declared = self.model_profile.barge_in
        return check_kind(kind) == KIND_DUPLEX if declared is None else declared

    def open_checks_for(self, kind: str) -> str | None:
        """The model whose open requirements apply, or None when none are enforced."""
        if not self.strict("require_model_extras"):
            return None
        if self.profile != "generic":
            return self.profile
        if self.require_model_extras:  # explicitly on: the kind's own model
            return MINICPMO.name if check_kind(kind) == KIND_DUPLEX else NEMOTRON.name
        return None

    def output_rate_for(self, kind: str) -> int:
        if self.output_rate_hz is not None:
            return self.output_rate_hz
        return _OUTPUT_RATE_HZ[check_kind(kind)]

    def has(self, fault: str) -> bool:
        return fault in self.faults
