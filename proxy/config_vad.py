"""The ``[vad]`` section: defaults for server-side turn detection and the VAD's costs."""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from proxy.config_ops import SECTION


@dataclass(frozen=True, slots=True, config=SECTION)
class VadConfig:
    """Defaults for server-side turn detection (OpenAI ``server_vad`` defaults)."""

    threshold: float = Field(
        default=0.5, gt=0, lt=1, description="Speech probability that counts as speech (0..1)."
    )
    prefix_padding_ms: int = Field(
        default=300, ge=0, description="Audio kept before detected speech onset."
    )
    silence_duration_ms: int = Field(
        default=500, gt=0, description="Silence that ends a user turn."
    )
    min_speech_ms: int = Field(
        default=150, ge=0, description="Speech shorter than this never starts a turn (clicks)."
    )
    hold_min_speech_ms: int = Field(
        default=64,
        ge=0,
        description="Speech over assistant playback that holds (pauses) its audio.",
    )
    # The trade (docs/benchmarks.md, "Barge-in"): sooner interrupts sooner and takes more
    # backchannels for interruptions; bench/bargein.py --sweep measures it.
    barge_in_decision_ms: int = Field(
        default=600,
        ge=100,
        le=3000,
        description="Speech over the answer is judged barge-in or not this long after onset.",
    )
    min_barge_in_ms: int = Field(
        default=800,
        ge=0,
        description=(
            "Backstop: this much user-like speech in one run over the answer cuts it, even if"
            " the run was judged someone else's (then only windows at the user's own level count)."
        ),
    )
    # Measured in docs/benchmarks.md ("A television still talking after the answer").
    background_pause_ms: int = Field(
        default=0,
        ge=0,
        le=5000,
        description="A run of speech judged someone else's over the answer (a television,"
        " babble) stays theirs after the answer, no turn, until the VAD stops it and this"
        " much more passes with no speech (0: the VAD's stop); the user's own voice in it,"
        " judged as over the answer, is a turn.",
    )
    target_barge_in_latency_ms: int = Field(
        default=300, gt=0, description="Declared in capabilities: speech onset to last cut delta."
    )
    echo_suppression: bool = Field(
        default=True, description="Remove the assistant's own audio from the mic before VAD."
    )
    # Measured in docs/benchmarks.md ("A separate loss path found on the way").
    overlap_keep_ms: int = Field(
        default=4096,
        ge=1024,
        le=16384,
        description="Audio kept per session to judge speech over the answer by (8 bytes a"
        " sample at 16 kHz): a VAD result that comes back later than this after its audio"
        " (a VAD behind under load) cannot be judged, and a barge-in in it is lost.",
    )
    max_batch: int = Field(
        default=64, ge=1, description="Most 512-sample windows per VAD inference."
    )
    threads: int = Field(default=1, ge=1, description="onnxruntime intra-op threads for the VAD.")
    gather_ms: float = Field(
        default=6.0,
        ge=0,
        le=50,
        description="Wait this long before each VAD inference for more sessions' windows"
        " (bigger batches, less CPU per session; 0: infer as soon as one is ready)."
        " A reload applies it to the next batch.",
    )
    # Measured in docs/benchmarks.md ("The VAD's hand-over"): up to 8 windows a batch
    # costs less on the loop than handed to the thread and back, and stalls it ~1 ms.
    inline_rows: int = Field(
        default=8,
        ge=0,
        description="VAD batches of at most this many windows run on the event loop's thread"
        " (no hand-over to the VAD thread and back; the loop waits for them: ~0.3 ms for one"
        " window, ~1.1 ms for 8). 0: every batch on the VAD thread.",
    )
    # Measured in docs/benchmarks.md ("The VAD's quiet gate"): off by default, since
    # Silero's state then misses the silence and its turns move (bench/vad_cost.py
    # --gate-turns).
    quiet_gate_dbfs: float | None = Field(
        default=None,
        ge=-120,
        le=-40,
        description="Audio windows whose peak stays at or below this level (dBFS), after"
        " 0.5 s of such windows, count as silence without running Silero (less CPU in"
        " silence; the model's state skips them). Unset: every window runs the model.",
    )
