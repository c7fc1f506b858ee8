"""Speech start/stop decisions from Silero probabilities, in audio time.

Silero gives one speech probability per 32 ms window (512 samples at 16 kHz). A
single window is far too noisy to act on, so this gate adds what pipecat's
``VADAnalyzer`` (QUIET -> STARTING -> SPEAKING -> STOPPING) and LiveKit's Silero
plugin (activation / deactivation thresholds) add, with one difference: time is
an *input*. Every decision is made from the sample index at which a window ends,
never from a clock, so the same probabilities always give the same events and
tests need no virtual time.

Two layers:

* per window, a Schmitt trigger: a window counts as speech when its probability
  reaches ``threshold``, or, if the previous window was speech, when it stays at
  or above ``neg_threshold``. That is the hysteresis Silero's own
  ``get_speech_timestamps`` uses (``neg_threshold = threshold - 0.15``);
* per run, durations: speech must last ``min_speech_ms`` before it starts (so a
  click or a cough never does), and silence must last ``silence_duration_ms``
  before it stops (so the dips between words never do).

Defaults follow OpenAI ``server_vad`` (threshold 0.5, prefix_padding_ms 300,
silence_duration_ms 500); a session changes them with ``turn_detection``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

WINDOW_MS = 32
"""Silero's window: 512 samples at 16 kHz, 256 at 8 kHz."""


@dataclass(frozen=True, slots=True)
class VadParams:
    threshold: float = 0.5  # OpenAI server_vad default
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    min_speech_ms: int = 150  # shorter bursts never start speech
    neg_threshold: float | None = None  # deactivation; None -> max(threshold - 0.15, 0.01)

    @property
    def deactivation(self) -> float:
        """The threshold a speech run must fall below to count as silence."""
        if self.neg_threshold is not None:
            return min(self.neg_threshold, self.threshold)
        return max(self.threshold - 0.15, 0.01)


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """Emitted once speech has lasted ``min_speech_ms``."""

    audio_start_ms: int  # onset: start of the first speech window, input-stream audio time
    detected_ms: int  # audio time of the decision (end of the deciding window)


@dataclass(frozen=True, slots=True)
class SpeechStopped:
    audio_end_ms: int  # end of the last speech window (the silence is not included)
    detected_ms: int


VadEvent = SpeechStarted | SpeechStopped


class _State(enum.Enum):
    QUIET = "quiet"
    STARTING = "starting"  # speech windows seen, not yet min_speech_ms of them
    SPEAKING = "speaking"
    STOPPING = "stopping"  # speech started, now silent, not yet silence_duration_ms


def _ms(sample: int, rate_hz: int) -> int:
    # Floor, so an audio time never points past the audio it describes.
    return sample * 1000 // rate_hz


class VadGate:
    """Hysteresis state machine: probabilities in, speech start/stop events out."""

    __slots__ = ("_last_end", "_last_speech_end", "_onset", "_params", "_prev_speech", "_state")

    def __init__(self, params: VadParams) -> None:
        self._params = params
        self._state = _State.QUIET
        self._prev_speech = False  # Schmitt trigger memory: was the last window speech?
        self._onset = 0  # sample where the current run began
        self._last_speech_end = 0  # sample where the last speech window ended
        self._last_end: int | None = None  # last window end seen, to refuse time going back

    @property
    def params(self) -> VadParams:
        return self._params

    @property
    def speaking(self) -> bool:
        """True between SpeechStarted and SpeechStopped."""
        return self._state in (_State.SPEAKING, _State.STOPPING)

    @property
    def starting(self) -> bool:
        """Speech windows heard, not yet ``min_speech_ms`` of them: a run not yet told
        speech or not (the next windows, at most ``min_speech_ms`` of audio, say)."""
        return self._state is _State.STARTING

    @property
    def onset_sample(self) -> int:
        """Where the current run of speech began (VAD-rate samples)."""
        return self._onset

    def update(self, params: VadParams) -> None:
        """Apply new ``turn_detection`` settings; the current run keeps going.

        New durations apply from the next window on: a run that is already long
        enough for a shorter ``min_speech_ms`` starts at the next speech window.
        """
        self._params = params

    def reset(self) -> None:
        """Back to quiet with no memory (e.g. after the input buffer is cleared).

        Time may restart from zero after a reset, as the VAD stream's does.
        """
        self._state = _State.QUIET
        self._prev_speech = False
        self._onset = 0
        self._last_speech_end = 0
        self._last_end = None

    def resume_speaking(self) -> None:
        """After a reset: a run told begun before a move goes on from the stream's start
        (no second start; silence from there on stops it)."""
        self.reset()
        self._state, self._prev_speech = _State.SPEAKING, True

    def padded_start_ms(self, event: SpeechStarted) -> int:
        """Where the committed user audio should begin: onset minus prefix padding.

        OpenAI reports this value as ``speech_started.audio_start_ms`` (it "includes
        the prefix_padding_ms"); it never goes before the start of the stream.
        """
        return max(0, event.audio_start_ms - self._params.prefix_padding_ms)

    def push(
        self, prob: float, window_end_sample: int, rate_hz: int = 16000
    ) -> list[SpeechStarted | SpeechStopped]:
        """Feed one window's probability; returns the events it decides (0 or 1)."""
        if self._last_end is not None and window_end_sample <= self._last_end:
            raise ValueError(
                f"window end {window_end_sample} is not after the previous {self._last_end}"
            )
        self._last_end = window_end_sample
        p = self._params
        if math.isnan(prob):
            prob = 0.0  # a broken window is no evidence of speech
        is_speech = prob >= (p.deactivation if self._prev_speech else p.threshold)
        self._prev_speech = is_speech
        window_start = window_end_sample - rate_hz * WINDOW_MS // 1000
        now_ms = _ms(window_end_sample, rate_hz)

        if is_speech:
            self._last_speech_end = window_end_sample
            if self._state is _State.QUIET:
                self._state = _State.STARTING
                self._onset = max(0, window_start)
            elif self._state is _State.STOPPING:
                self._state = _State.SPEAKING  # the dip was shorter than the silence
            if (
                self._state is _State.STARTING
                and now_ms - _ms(self._onset, rate_hz) >= p.min_speech_ms
            ):
                self._state = _State.SPEAKING
                return [SpeechStarted(_ms(self._onset, rate_hz), now_ms)]
            return []

        if self._state is _State.STARTING:
            self._state = _State.QUIET  # too short: a burst, not speech
        elif self._state is _State.SPEAKING:
            self._state = _State.STOPPING
        if (
            self._state is _State.STOPPING
            and now_ms - _ms(self._last_speech_end, rate_hz) >= p.silence_duration_ms
        ):
            self._state = _State.QUIET
            return [SpeechStopped(_ms(self._last_speech_end, rate_hz), now_ms)]
        return []
