"""Barge-in or not: the verdict on speech over the assistant, from its evidence.

Each VAD window of an overlap is judged *user-like* or not from what
``shim/overlap_evidence.py`` measures: Silero must call it speech, and it must
not be the assistant's echo (coherent with what was sent, or mostly removed by
echo suppression), not background (much quieter than the user's own turns),
and voiced like one close talker. The overlap is decided ``decision_ms`` after
its onset (audio time):

A quiet voice is told from a television's or a room's by how sharply it falls
after its syllables (``decay_db``, ``shim/overlap_directness.py``): a *direct*
voice is at the microphone however quiet, so the level margins that mark
background are wider for it by ``direct_margin_db``. Nearer the user's level
(``far_margin_db`` under it), a voice that is not direct is background if it is never
quiet between its words (``close_spread_db``): babble whose voices talk at once, or a
television over a music bed, fill the gaps a close voice leaves.

* barge-in if the user-like windows hold at least ``min_user_share`` of that
  span, the overlap as a whole is not much quieter than the user's own turns,
  and the user is speaking at that moment;
* otherwise it may wait up to ``grace_ms`` more for the voice to come back
  (a dip between syllables), and while the user's voice has paused for less
  than ``pause_ms`` (a pause inside one utterance: "wait, ... stop"); then it
  is released: a backchannel that is over, or echo, noise or distant voices
  (the reason says which).

Why these and not a longer wait: the first half second of "uh-huh" and of
"wait, stop" sound alike, but a backchannel is over by then and an
interruption is not; what else sounds like speech is told apart by what the
proxy knows (the far end, the user's level), not by waiting.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from shim.overlap_evidence import WindowEvidence, loud_level

RATE = 16000
WINDOW_MS = 32
FLOOR_DB = -70.0  # a window's level counted no lower in an overlap's spread (silence)
# User-like windows in a row that begin an overlap (and hold the assistant's audio).
HOLD_WINDOWS = 2
# User speech that resumes this soon after an overlap's last user-like window goes on
# from it ("wait, ... stop, ..."): the pause was inside one utterance, held through.
CARRY_MS = 700


@dataclass(frozen=True, slots=True)
class DecisionParams:
    decision_ms: int = 600
    grace_ms: int = 150
    # A pause this short (the session's silence_duration_ms) does not end an utterance:
    # user-like speech is held undecided through it ("wait, ... stop, ...").
    pause_ms: int = 500
    threshold: float = 0.5  # Silero probability of a speech window (the session's)
    min_user_share: float = 0.5
    max_coherence: float = 0.5  # above: the window is mostly the assistant's echo
    min_kept_db: float = -6.0  # echo suppression removed more than this: echo
    # A window this much quieter than the user's loud level is not the user's (a soft
    # consonant of the user's is rarely); a whole overlap whose loud level is
    # ``level_margin_db`` below the user's is background (a television, distant voices).
    window_margin_db: float = 16.0
    level_margin_db: float = 8.0
    floor_db: float = -50.0  # with no turn of the user's heard yet: quieter is background
    min_voicing: float = 0.35
    # Two separate falls this steep (dB within 30 ms, on the microphone as after echo
    # suppression) since the overlap's onset, within the last half second: a voice at
    # the microphone (a television's or a room's, echo suppressed or not, measured at
    # 8-9.3 dB at most on the dev corpus's; a quiet close voice at 10-20 dB).
    direct_decay_db: float = 10.0
    direct_margin_db: float = 8.0  # how much wider the overlap's level margins are for it
    # Windows of an overlap that fall so, for it to be a voice at the microphone (its
    # first syllable has not ended yet at the start; a television's never do).
    direct_windows: int = 3
    # A far voice nearer the user's level: an overlap not direct, ``far_margin_db`` below
    # the user, whose windows' levels (gaps included) spread less than ``close_spread_db``
    # (10th to 90th percentile) is background: other voices, a room or a music bed fill
    # its gaps, where a close voice's fall to the room's floor between its syllables.
    far_margin_db: float = 5.0
    close_spread_db: float = 12.0
    # A window of a close voice below the window floor by no more than this is still the
    # user's voice (a softer syllable); further down it is a dip or a fading tail.
    direct_window_db: float = 4.0
    # One window this sure of speech at the user's level begins an overlap by itself, if
    # echo suppression took next to nothing of it (under echo, one window is too little).
    lone_prob: float = 0.9
    lone_kept_db: float = -1.0


class Kind(enum.Enum):
    USER = "user"
    ECHO = "echo"
    BACKGROUND = "background"
    UNVOICED = "unvoiced"
    SILENCE = "silence"


def direct(ev: WindowEvidence, p: DecisionParams, since: int = 0) -> bool:
    """The sound around the window (from ``since`` on) falls as a voice at the microphone
    does."""
    return ev.decay_since(since) >= p.direct_decay_db


def classify(ev: WindowEvidence, user_level_db: float | None, p: DecisionParams) -> Kind:
    """What one window of an overlap most likely is."""
    if ev.prob < p.threshold:
        return Kind.SILENCE
    if ev.coherence > p.max_coherence or ev.kept_db < p.min_kept_db:
        return Kind.ECHO
    floor = p.floor_db if user_level_db is None else user_level_db - p.window_margin_db
    soft = ev.level_db < floor
    if soft and not direct(ev, p):
        return Kind.BACKGROUND
    if ev.voicing < p.min_voicing:
        # A close voice's soft dip or fading tail is no more speech to come (a
        # backchannel's end), where a loud consonant is.
        return Kind.SILENCE if soft else Kind.UNVOICED
    if soft and ev.level_db < floor - p.direct_window_db:
        return Kind.SILENCE
    return Kind.USER


def is_echo(ev: WindowEvidence, p: DecisionParams) -> bool:
    """``classify(ev, ...) is Kind.ECHO``, without what only the later classes need."""
    return not ev.prob < p.threshold and (
        ev.coherence > p.max_coherence or ev.kept_db < p.min_kept_db
    )


class Judged:
    """A window and its class, classified when first read, with the user's level and
    the parameters of the moment it was measured: the same class as ``classify`` then,
    but a window whose class nothing reads (most, while nothing plays) never needs its
    voicing measured (an FFT)."""

    __slots__ = ("_kind", "_p", "_user_level", "ev")

    def __init__(self, ev: WindowEvidence, user_level_db: float | None, p: DecisionParams):
        self.ev, self._user_level, self._p = ev, user_level_db, p
        self._kind: Kind | None = None

    @property
    def kind(self) -> Kind:
        kind = self._kind
        if kind is None:
            kind = self._kind = classify(self.ev, self._user_level, self._p)
        return kind

    def __iter__(self) -> Iterator[WindowEvidence | Kind]:
        """``ev, kind = judged``, as the (window, class) pairs it stands for."""
        return iter((self.ev, self.kind))


class Verdict(enum.Enum):
    WAIT = "wait"
    BARGE_IN = "barge_in"
    RELEASE = "release"


# Why an overlap was released, as the extension event ``output_audio_buffer.resumed``
# says it (``docs/protocol.md``).
RELEASE_REASONS = {
    Kind.USER: "backchannel",
    Kind.ECHO: "echo",
    Kind.BACKGROUND: "background_speech",
    Kind.UNVOICED: "noise",
    Kind.SILENCE: "noise",
}


@dataclass
class Tally:
    """The windows of one overlap so far."""

    onset_sample: int
    counts: dict[Kind, int]
    last: Kind = Kind.SILENCE
    levels: list[float] = field(default_factory=list)  # of its speech windows
    last_user_end: int = 0  # sample where its last user-like window ended
    direct: int = 0  # of its user-like windows, those that fall as a close voice does
    heard: list[float] = field(default_factory=list)  # the levels of all its windows

    @classmethod
    def starting(cls, onset_sample: int) -> Tally:
        return cls(onset_sample, dict.fromkeys(Kind, 0))

    def add(
        self, kind: Kind, ev: WindowEvidence | None = None, p: DecisionParams | None = None
    ) -> None:
        """A window of the overlap; with ``p``, a speech window not the echo's counts as a
        close voice's if it falls as one does since the overlap's onset (``direct``): not
        the echo's falls, nor a television's before the overlap began."""
        self.counts[kind] += 1
        self.last = kind
        if ev is not None:
            self.heard.append(max(ev.level_db, FLOOR_DB))
        if ev is not None and kind is not Kind.SILENCE:
            self.levels.append(ev.level_db)
        # A close voice's falls show in its own windows and in the soft dips after its
        # syllables (speech to Silero, SILENCE here); never in the echo's or someone
        # else's: a BACKGROUND window did not fall enough over its whole span, and its
        # falls from the onset on do not make it a close voice's.
        if (
            ev is not None
            and p is not None
            and kind not in (Kind.ECHO, Kind.BACKGROUND)
            and ev.prob >= p.threshold
        ):
            self.direct += direct(ev, p, self.onset_sample)
        if ev is not None and kind is Kind.USER:
            self.last_user_end = ev.end_sample

    def background(self, user_level_db: float | None, p: DecisionParams) -> bool:
        """The overlap as a whole is much quieter than the user: someone else."""
        if user_level_db is None or not self.levels:
            return False
        # A voice at the microphone: quieter than the user, but not across the room.
        close = self.direct >= p.direct_windows
        wider = p.direct_margin_db if close else 0.0
        loud = loud_level(self.levels)
        if loud < user_level_db - p.level_margin_db - wider:
            return True
        # Nearer: a far voice if never as quiet between its words as a close voice is.
        return not close and loud < user_level_db - p.far_margin_db and self.filled(p)

    def filled(self, p: DecisionParams) -> bool:
        """Its windows' levels spread less than a close voice's (over half a decision's
        span at least: a syllable alone does not spread)."""
        if len(self.heard) * WINDOW_MS < p.decision_ms // 2:
            return False
        lo, hi = np.percentile(self.heard, [10, 90])
        return float(hi - lo) < p.close_spread_db

    @property
    def user_ms(self) -> int:
        return self.counts[Kind.USER] * WINDOW_MS

    def main_other(self, user_level_db: float | None, p: DecisionParams) -> Kind:
        """What the overlap mostly was, if not the user: the release's reason."""
        if self.background(user_level_db, p):
            return Kind.BACKGROUND
        others = {k: n for k, n in self.counts.items() if k not in (Kind.USER, Kind.SILENCE)}
        if self.counts[Kind.USER] and self.counts[Kind.USER] >= max(others.values(), default=0):
            return Kind.USER
        if not any(others.values()):
            return Kind.USER if self.counts[Kind.USER] else Kind.SILENCE
        return max(others, key=lambda k: others[k])


def judge(
    tally: Tally, end_sample: int, p: DecisionParams, user_level_db: float | None = None
) -> Verdict:
    """The verdict after the window ending at ``end_sample``."""
    elapsed = (end_sample - tally.onset_sample) * 1000 // RATE
    if elapsed < p.decision_ms:
        return Verdict.WAIT
    if tally.background(user_level_db, p):
        return Verdict.RELEASE
    enough = tally.user_ms >= p.min_user_share * p.decision_ms
    # Speaking now: a voiced window of the user's, or a consonant (speech, not voiced).
    if enough and tally.last in (Kind.USER, Kind.UNVOICED):
        return Verdict.BARGE_IN
    short = tally.user_ms < p.min_user_share * p.decision_ms / 2
    if elapsed < p.decision_ms + p.grace_ms and not short:
        return Verdict.WAIT  # a dip between syllables
    paused_ms = (end_sample - tally.last_user_end) * 1000 // RATE
    pause_ms = max(p.pause_ms, CARRY_MS)  # the answer does not play into such a pause
    if not short and paused_ms < pause_ms and tally.main_other(user_level_db, p) is Kind.USER:
        return Verdict.WAIT  # the user's voice may come back: one utterance, not over yet
    return Verdict.RELEASE
