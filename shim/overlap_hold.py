"""How long a hold of the assistant's audio may last, and what an overlap goes on from.

A hold lasts while the overlap is undecided (``shim/overlap_decision.py``); past the
VAD's stop it lasts through a pause of the user's voice, up to ``CARRY_MS`` after its
last user-like window. Both are bounded on the session clock the ticks carry, so a
hold ends even when no more audio comes (the client muted, or stopped sending).
"""

from __future__ import annotations

from collections.abc import Sequence

from shim.overlap import Cue
from shim.overlap_decision import CARRY_MS, DecisionParams, Judged, Kind, Tally
from shim.overlap_evidence import WINDOW, OverlapEvidence
from shim.settings import VAD_RATE


class HoldClock:
    """The session clock of a hold's start and of its last user-like window."""

    __slots__ = ("held_at", "user_at")

    def __init__(self) -> None:
        self.held_at = self.user_at = 0.0

    def began(self, now: float) -> None:
        self.held_at = self.user_at = now

    def heard(self, tally: Tally, end_sample: int, now: float) -> None:
        """The window ending at ``end_sample`` was added to the held ``tally``."""
        if tally.last_user_end == end_sample:  # a user-like window
            self.user_at = now

    def expired(self, now: float, speaking: bool, max_hold_ms: int) -> tuple[Cue, str] | None:
        """Why the hold ends now without a verdict, if it does: the voice did not come back
        within ``CARRY_MS`` after the VAD's stop (a backchannel), or it has lasted
        ``max_hold_ms`` (no verdict came: no more windows)."""
        if not speaking and now > self.user_at + CARRY_MS:
            return Cue.SPEECH_STOPPED, "backchannel"
        if now - self.held_at > max_hold_ms:
            return Cue.HOLD_TOO_LONG, "hold_limit"
        return None


def carries(carry: Tally, onset_sample: int, p: DecisionParams) -> bool:
    """An overlap beginning at ``onset_sample`` goes on from the one released as a
    backchannel (``carry``): the voice came back within ``CARRY_MS`` of its last user-like
    window, and not so long after its onset that sparse sure windows (a tap, a clock,
    "mm" now and then) add up to a barge-in one by one."""
    ms = VAD_RATE // 1000
    return (
        onset_sample - carry.last_user_end <= CARRY_MS * ms
        and onset_sample - carry.onset_sample <= (p.decision_ms + p.grace_ms + CARRY_MS) * ms
    )


def opening_tally(
    evidence: OverlapEvidence,
    recent: Sequence[Judged],
    windows: int,
    carry: Tally | None,
    p: DecisionParams,
) -> Tally:
    """What an overlap begun on the last ``windows`` of ``recent`` (user-like) is decided
    on: the windows from the voice's onset (``OverlapEvidence.voice_onset``, not
    Silero's), or the backchannel released just before (``carry``) and them, the same
    utterance after a pause."""
    run = list(recent)[-windows:]
    first = run[0].ev.end_sample - WINDOW
    onset_sample = evidence.voice_onset(first + WINDOW, max(j.ev.level_db for j in run))
    tally = Tally.starting(onset_sample)
    if carry is not None and carries(carry, onset_sample, p):
        tally = carry  # the same utterance, after a pause: decided on the whole of it
    for j in recent:
        if j.ev.end_sample > first:
            tally.add(j.kind, j.ev, p)
    return tally


def carried(tally: Tally, other: Kind, p: DecisionParams) -> Tally | None:
    """What a released overlap leaves for the next to go on from: the user's voice, if
    more than a short sound of it (one sure window released as short carries nothing)."""
    short = tally.user_ms < p.min_user_share * p.decision_ms / 2
    return tally if other is Kind.USER and not short else None


def dismisses(tally: Tally, other: Kind, lone: bool) -> bool:
    """A released overlap (``other``: what it mostly was) was someone else's, and the
    speech run it was in is theirs: only speech at the user's own level begins another.
    One begun on one window and holding that window alone is too little to tell."""
    speech = sum(n for kind, n in tally.counts.items() if kind is not Kind.SILENCE)
    return other is not Kind.USER and not (lone and speech <= 1)
