"""Barge-in as a state table: the user speaks while the assistant's audio plays.

The first 200 ms of "uh-huh" and of "wait, stop" sound alike, so the decision
takes two steps (``docs/architecture.md`` has the timeline):

1. *hold*: speech starts over the assistant's audio: the proxy stops forwarding
   that audio and keeps it (bounded) instead of dropping it;
2. *cut* once the overlapping speech holds ``min_barge_in_ms`` of voiced audio:
   the held audio is dropped, the response cancelled (``turn_detected``) and the
   item truncated at what was played, and the speech is the user's turn; or
   *release* if the speech stops first (a backchannel), or the hold lasts too long:
   the held audio is sent and the response goes on untouched.

States and transitions are data (in the spirit of h11's ``_state.py``): an
overlap (an *episode*) runs QUIET -> HOLDING -> CUT | RELEASED | TURN, and the
machine is QUIET again once the session has acted on the outcome.
``TELL_SPEECH_STARTED`` says at which transition the client hears
``input_audio_buffer.speech_started`` for the overlapping speech; a backchannel's
``speech_stopped`` is told only if its start was.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Overlap(enum.Enum):
    QUIET = "quiet"  # no undecided overlap: output flows
    HOLDING = "holding"  # speech over the assistant, undecided: output is held
    CUT = "cut"  # barge-in: the response is cancelled, the speech is the user's turn
    RELEASED = "released"  # backchannel (or held too long): held output is sent
    TURN = "turn"  # the assistant finished first: the speech is simply the next turn


class Cue(enum.Enum):
    SPEECH_OVER_ASSISTANT = "speech_over_assistant"  # the VAD started speech during playback
    ENOUGH_SPEECH = "enough_speech"  # the overlap holds min_barge_in_ms of voiced audio
    SPEECH_STOPPED = "speech_stopped"  # the VAD stopped the overlapping speech first
    HOLD_TOO_LONG = "hold_too_long"  # more than max_hold_ms of output held
    ASSISTANT_FINISHED = "assistant_finished"  # nothing left playing or to play
    INPUT_CLEARED = "input_cleared"  # the client cleared its input buffer


TRANSITIONS: dict[Overlap, dict[Cue, Overlap]] = {
    Overlap.QUIET: {Cue.SPEECH_OVER_ASSISTANT: Overlap.HOLDING},
    Overlap.HOLDING: {
        # Speech the VAD started afresh (its stream restarted): it replaces the episode.
        Cue.SPEECH_OVER_ASSISTANT: Overlap.HOLDING,
        Cue.ENOUGH_SPEECH: Overlap.CUT,
        Cue.SPEECH_STOPPED: Overlap.RELEASED,
        Cue.HOLD_TOO_LONG: Overlap.RELEASED,
        Cue.ASSISTANT_FINISHED: Overlap.TURN,
        Cue.INPUT_CLEARED: Overlap.QUIET,
    },
    # Outcomes: the session acts on them, then the machine is QUIET again.
    Overlap.CUT: {},
    Overlap.RELEASED: {},
    Overlap.TURN: {},
}

# Where the client is told of the overlapping speech: at once, as the hold begins
# (what the listener hears as "it stopped" then matches an event).
TELL_SPEECH_STARTED: frozenset[tuple[Overlap, Cue]] = frozenset(
    {(Overlap.QUIET, Cue.SPEECH_OVER_ASSISTANT), (Overlap.HOLDING, Cue.SPEECH_OVER_ASSISTANT)}
)


class OverlapError(RuntimeError):
    """A cue the table has no transition for in the current state (a bug)."""


@dataclass
class Episode:
    """User speech that began while the assistant was speaking."""

    item_id: str
    onset_ms: int  # padded start of the speech, input audio time
    voiced_ms: int = 0
    told: bool = False  # the client has had speech_started for it


@dataclass(frozen=True, slots=True)
class Step:
    outcome: Overlap
    episode: Episode
    tell_started: bool  # send speech_started for ``episode`` now


class OverlapMachine:
    def __init__(self) -> None:
        self.state = Overlap.QUIET
        self.episode: Episode | None = None

    @property
    def holding(self) -> bool:
        return self.state is Overlap.HOLDING

    def begin(self, episode: Episode) -> Step:
        """Speech started over the assistant: hold its output."""
        step = self._fire(Cue.SPEECH_OVER_ASSISTANT, episode)
        self.episode = episode
        return step

    def decide(self, cue: Cue) -> Step:
        """End the overlap with ``cue``; the machine is QUIET again afterwards."""
        episode = self.episode
        if episode is None:
            raise OverlapError(f"{cue.value} with no overlap")
        step = self._fire(cue, episode)
        self.state, self.episode = Overlap.QUIET, None
        return step

    def voiced(self, ms: int) -> None:
        if self.episode is not None:
            self.episode.voiced_ms += ms

    def _fire(self, cue: Cue, episode: Episode) -> Step:
        target = TRANSITIONS[self.state].get(cue)
        if target is None:
            raise OverlapError(f"no transition from {self.state.value} on {cue.value}")
        tell = (self.state, cue) in TELL_SPEECH_STARTED and not episode.told
        episode.told = episode.told or tell
        self.state = target
        return Step(target, episode, tell)
