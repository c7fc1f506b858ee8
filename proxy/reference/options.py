"""Tunables of the reference backends (stand-ins for vLLM-Omni 0.30.0).

Defaults follow the real server where it has a number (``disconnect_grace_s``,
replay TTL and byte cap, first-message timeout, idle timeout: vLLM-Omni's
``DuplexSessionRuntimeConfig`` and ``serving.py``) and the model presets it
ships (MiniCPM-o 4.5 speaks 24 kHz, Nemotron VoiceChat 22.05 kHz in 80 ms
frames).  The rest describe the stand-in "model" (its turn detector and its
reply) and the fault switches a probe uses to prove its checks can fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    #: Ack-only turn ownership exactly like vLLM-Omni: the assistant owns the turn while
    #: ``sent_ms > committed_ms`` even for a client that never acks.  Off by default:
    #: a client that never sends playback.ack is taken to play in real time.
    strict_ack_ownership: bool = False
    #: Enforce the presets' open requirements: MiniCPM-o needs ``ref_audio`` (kind
    #: "duplex", ``ref_audio_required``), Nemotron needs ``extra_body.auto_response``
    #: (kind "duplex-no-barge-in", ``unsupported_nemotron_duplex_mode``).
    require_model_extras: bool = False
    #: Outbound bytes queued for one socket before a non-reading client is dropped.
    max_outbound_bytes: int = 4 * 1024 * 1024
    #: Up to this many committed user turns may wait for the assistant to finish.
    max_pending_turns: int = 4
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

    def chunk_ms_for(self, kind: str) -> int:
        return self.chunk_ms if self.chunk_ms is not None else _CHUNK_MS[check_kind(kind)]

    def output_rate_for(self, kind: str) -> int:
        if self.output_rate_hz is not None:
            return self.output_rate_hz
        return _OUTPUT_RATE_HZ[check_kind(kind)]

    def has(self, fault: str) -> bool:
        return fault in self.faults
