"""Per-process knobs of the emulated modes (from the proxy's config)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shim.vad_gate import VadParams

# The VAD (Silero) and the session's input timeline run at 16 kHz.
VAD_RATE = 16000


@dataclass(frozen=True, slots=True)
class ShimSettings:
    """Per-process knobs (from config); per-session ones come via session.update."""

    vad: VadParams = field(default_factory=VadParams)
    # Speech over the assistant is judged barge-in or not this long after its onset
    # (shim/overlap_decision.py); a session may change it (turn_detection's
    # barge_in_decision_ms). Sooner interrupts sooner and mistakes more backchannels.
    barge_in_decision_ms: int = 600
    # A backstop: this much user-like speech over the assistant cuts, whatever the
    # decision said earlier (speech with long pauses: "wait, ... stop, ...").
    min_barge_in_ms: int = 800
    # Longest assistant audio held while deciding barge-in vs backchannel.
    max_hold_ms: int = 3000
    # Longest input kept for one user turn (bounded memory per session).
    max_turn_ms: int = 60_000
    # Audio the overlap evidence keeps to measure the VAD's windows on (each signal, per
    # session, 4 bytes a sample): a window whose result comes back later than this after
    # its audio (a VAD behind under load) cannot be measured, and reads as silence.
    overlap_keep_ms: int = 4096
    echo_suppression: bool = True
    # Speech needed to *hold* the assistant's audio while it plays. Shorter than a
    # turn's min_speech_ms: a hold costs nothing if the speech turns out to be short
    # (the audio resumes), and it is what the listener hears as "it stopped".
    hold_min_speech_ms: int = 64
    # A run of speech judged someone else's over the answer stays theirs after the answer
    # until the VAD stops it and this much more passes with no speech (0: the VAD's stop);
    # shim/background_run.py.
    background_pause_ms: int = 0

    @property
    def overlap_keep(self) -> int:
        """``overlap_keep_ms`` in samples of the input timeline."""
        return self.overlap_keep_ms * VAD_RATE // 1000
