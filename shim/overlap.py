"""Barge-in as a state table: the user speaks while the assistant's audio plays.

Real clients (the OpenAI Agents SDK, the realtime console, telephony samples)
stop playback and truncate the moment they get ``input_audio_buffer.speech_started``:
to them every ``speech_started`` during assistant audio *is* an interruption. So
the proxy decides first and tells afterwards (``docs/protocol.md``, "Overlap
protocol"):

1. *hold*: speech starts over the assistant's audio: the proxy stops forwarding
   that audio and keeps it (bounded); the client hears a pause but gets no GA
   event (a client that opted in gets ``output_audio_buffer.paused``);
2. *cut* once the overlap is judged a barge-in (``shim/overlap_decision.py``,
   ``barge_in_decision_ms`` after its onset): only now does the client get
   ``speech_started``; the held audio is dropped, the response cancelled
   (``turn_detected``) and the item truncated at what was played; or
   *release* if it is a backchannel, echo, noise or distant voices, or the hold
   lasts too long: the held audio is sent, the response goes on untouched, and
   the client never hears of the overlap (no ``speech_started``, so no
   ``speech_stopped``; an opted-in client gets ``output_audio_buffer.resumed``).

States and transitions are data (in the spirit of h11's ``_state.py``): an
overlap (an *episode*) runs QUIET -> HOLDING -> CUT | RELEASED | TURN, and the
machine is QUIET again once the session has acted on the outcome.
``TELL_SPEECH_STARTED`` says at which transitions the client hears
``input_audio_buffer.speech_started`` for the overlapping speech: the decided
barge-in, and speech that outlasts the assistant (then nothing plays, and GA
semantics apply).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from shim.overlap_decision import Tally


class Overlap(enum.Enum):
    QUIET = "quiet"  # no undecided overlap: output flows
    HOLDING = "holding"  # speech over the assistant, undecided: output is held
    CUT = "cut"  # barge-in: the response is cancelled, the speech is the user's turn
    RELEASED = "released"  # backchannel (or held too long): held output is sent
    TURN = "turn"  # the assistant finished first: the speech is simply the next turn


class Cue(enum.Enum):
    SPEECH_OVER_ASSISTANT = "speech_over_assistant"  # the VAD started speech during playback
    BARGE_IN = "barge_in"  # the overlap is judged the user interrupting
    NOT_AN_INTERRUPTION = "not_an_interruption"  # judged a backchannel, echo or background
    SPEECH_STOPPED = "speech_stopped"  # the VAD stopped the overlapping speech first
    HOLD_TOO_LONG = "hold_too_long"  # more than max_hold_ms of output held
    ASSISTANT_FINISHED = "assistant_finished"  # nothing left playing or to play
    INPUT_CLEARED = "input_cleared"  # the client cleared its input buffer


TRANSITIONS: dict[Overlap, dict[Cue, Overlap]] = {
    Overlap.QUIET: {Cue.SPEECH_OVER_ASSISTANT: Overlap.HOLDING},
    Overlap.HOLDING: {
        # Speech the VAD started afresh (its stream restarted): it replaces the episode.
        Cue.SPEECH_OVER_ASSISTANT: Overlap.HOLDING,
        Cue.BARGE_IN: Overlap.CUT,
        Cue.NOT_AN_INTERRUPTION: Overlap.RELEASED,
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

# Where the client is told of the overlapping speech: only once it is decided to be
# the user's (a GA client stops playback on speech_started), or once nothing plays.
TELL_SPEECH_STARTED: frozenset[tuple[Overlap, Cue]] = frozenset(
    {(Overlap.HOLDING, Cue.BARGE_IN), (Overlap.HOLDING, Cue.ASSISTANT_FINISHED)}
)
# Where a client that opted in to the overlap events hears that the assistant's
# audio paused (a hold begins) and resumed (held audio goes on).
TELL_PAUSED: frozenset[tuple[Overlap, Cue]] = frozenset(
    {(Overlap.QUIET, Cue.SPEECH_OVER_ASSISTANT)}
)
TELL_RESUMED: frozenset[tuple[Overlap, Cue]] = frozenset(
    {
        (Overlap.HOLDING, Cue.NOT_AN_INTERRUPTION),
        (Overlap.HOLDING, Cue.SPEECH_STOPPED),
        (Overlap.HOLDING, Cue.HOLD_TOO_LONG),
        (Overlap.HOLDING, Cue.INPUT_CLEARED),
    }
)


class OverlapError(RuntimeError):
    """A cue the table has no transition for in the current state (a bug)."""


@dataclass
class Episode:
    """User speech that began while the assistant was speaking."""

    item_id: str
    onset_ms: int  # padded start of the speech, input audio time
    tally: Tally = field(default_factory=lambda: Tally.starting(0))
    told: bool = False  # the client has had speech_started for it


@dataclass(frozen=True, slots=True)
class Step:
    outcome: Overlap
    episode: Episode
    tell_started: bool  # send speech_started for ``episode`` now
    tell_paused: bool = False  # an opted-in client hears output_audio_buffer.paused
    tell_resumed: bool = False  # ... and output_audio_buffer.resumed


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

    def _fire(self, cue: Cue, episode: Episode) -> Step:
        target = TRANSITIONS[self.state].get(cue)
        if target is None:
            raise OverlapError(f"no transition from {self.state.value} on {cue.value}")
        key = (self.state, cue)
        tell = key in TELL_SPEECH_STARTED and not episode.told
        episode.told = episode.told or tell
        self.state = target
        return Step(target, episode, tell, key in TELL_PAUSED, key in TELL_RESUMED)
