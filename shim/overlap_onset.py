"""What begins an overlap, and what counts towards the backstop, from the windows judged.

Two user-like windows in a row begin an overlap (fresh speech of the user's), or one
alone, sure speech at the user's own level; after an overlap of someone else's in the
same speech run (*dismissed*), only speech at the user's own level does, and only such
speech counts towards the backstop (``min_barge_in_ms``). The verdict on an overlap once
begun is ``shim/overlap_decision.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from shim.overlap_decision import HOLD_WINDOWS, DecisionParams, Judged, Kind, direct
from shim.overlap_evidence import WindowEvidence


def user_run(
    recent: Sequence[Judged],
    dismissed: bool,
    user_level_db: float | None,
    p: DecisionParams,
) -> int:
    """How many of the last windows begin an overlap (0: none): HOLD_WINDOWS user-like
    windows in a row (fresh speech of the user's), or one alone, sure speech at the user's
    own level (a first vowel whose consonants Silero doubts: "Ex-cuse me"); after an
    overlap of someone else's in this run (``dismissed``), at the user's own level."""
    last = list(recent)[-HOLD_WINDOWS:]
    if not last or last[-1].kind is not Kind.USER:
        return 0
    if len(last) == HOLD_WINDOWS and all(j.kind is Kind.USER for j in last):
        if not dismissed or user_level_db is None:
            return HOLD_WINDOWS
        at_level = all(j.ev.level_db >= user_level_db - _margin(j.ev, p) for j in last)
        return HOLD_WINDOWS if at_level else 0
    ev = last[-1].ev
    if user_level_db is None or ev.prob < p.lone_prob or ev.kept_db < p.lone_kept_db:
        return 0
    return int(ev.level_db >= user_level_db - p.level_margin_db)


def _margin(ev: WindowEvidence, p: DecisionParams) -> float:
    """How far below the user's level a window of a run already dismissed as someone
    else's may be and still be the user's: wider for a voice at the microphone."""
    return p.level_margin_db + (p.direct_margin_db if direct(ev, p) else 0.0)


def backstop_counts(
    ev: WindowEvidence,
    kind: Kind,
    dismissed: bool,
    user_level_db: float | None,
    p: DecisionParams,
) -> bool:
    """The window counts towards the backstop (``min_barge_in_ms`` of the user's speech
    over the answer in one run): a user-like window and, after an overlap of someone
    else's in this run (``dismissed``), at the user's own level, as ``user_run`` asks of
    the windows that begin an overlap. Else a long run of a television's or a room's
    voices, whose louder words pass as user-like now and then, adds up to the backstop
    and cuts the answer the moment one of those words is held."""
    if kind is not Kind.USER:
        return False
    if dismissed and user_level_db is not None:
        return ev.level_db >= user_level_db - _margin(ev, p)
    return True
