"""Speech judged someone else's over the answer, still heard once the answer has ended.

While the assistant's audio plays, an overlap of someone else's voice (a television,
babble, a room's voices: ``shim/overlap_decision.py``) is released and the answer goes
on; the speech run it was in stays theirs (``shim/overlap_onset.py``, *dismissed*). A
television that goes on talking after the answer has played out is still that voice:
outside playback ``speech_started`` is immediate (GA semantics), but not for a voice
just judged background. So such a run stays background after the answer:

* until it pauses: the VAD stops the run and no speech follows within
  ``background_pause_ms`` of its last speech window (0: the VAD's stop alone); a run
  that starts after that is judged as usual, a turn at once;
* or until the user's own voice is heard in it, judged as over the answer: speech at the
  user's level, as begins an overlap in a dismissed run (``user_run``), then judged a
  barge-in on its windows (``judge``, ``decision_ms`` after its onset), is the user's
  turn from its onset. A television's louder words reach the user's level now and then;
  judged on the whole of them they are mostly background again. As over the answer, the user's
  words that resume after a dip are judged on from where they began
  (``shim/overlap_hold.py``, ``carries``).

Sans-I/O: VAD-timeline samples in, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from shim.input_history import ms_to_sample
from shim.overlap_decision import DecisionParams, Judged, Tally, Verdict, judge
from shim.overlap_evidence import OverlapEvidence
from shim.overlap_hold import carried, carries
from shim.overlap_onset import user_run
from shim.settings import VAD_RATE, ShimSettings
from shim.vad_gate import WINDOW_MS, SpeechStarted

WINDOW = ms_to_sample(WINDOW_MS)


class BackgroundRun:
    __slots__ = ("_carry", "_last", "_tally", "active", "user_onset")

    def __init__(self) -> None:
        self.active = False  # someone else's speech goes on (or paused, not yet long)
        self._last = 0  # VAD sample where its last speech window ended
        # Where the user's voice was heard in it (VAD sample), until the session takes it.
        self.user_onset: int | None = None
        self._tally: Tally | None = None  # speech in it that may be the user's, undecided
        self._carry: Tally | None = None  # the last such speech released, if the user's

    def dismissed(self, theirs: bool, end_sample: int) -> None:
        """An overlap was released at the window ending at ``end_sample``; ``theirs``: its
        run was judged someone else's (``shim/overlap_hold.py``, ``dismisses``)."""
        if theirs:
            self.active, self._last = True, max(self._last, end_sample)

    def end(self) -> None:
        """It is over, or was the user's after all (a barge-in, a turn)."""
        self.active, self._tally, self._carry = False, None, None

    def user_voice(
        self, recent: Sequence[Judged], evidence: OverlapEvidence, p: DecisionParams, run: bool
    ) -> SpeechStarted | None:
        """After the answer, in a ``run`` of the VAD's, the window last in ``recent``: the
        user's own voice's start, once its windows are judged a barge-in (then the run is
        the user's turn from that onset, no longer someone else's)."""
        level, tally = evidence.user_level_db, self._tally
        if tally is None:
            n = user_run(recent, True, level, p) if run else 0
            if not n:
                return None
            tally = Tally.starting(recent[-n].ev.end_sample - WINDOW)
            if self._carry is not None and carries(self._carry, tally.onset_sample, p):
                tally = self._carry  # the same words after a dip: judged on, from its onset
            self._tally, self._carry = tally, None
            for j in list(recent)[-n:-1]:
                tally.add(j.kind, j.ev, p)
        last = recent[-1].ev
        tally.add(recent[-1].kind, last, p)
        verdict = judge(tally, last.end_sample, p, level) if run else Verdict.RELEASE
        if verdict is Verdict.RELEASE:
            self._carry = carried(tally, tally.main_other(level, p), p)
        if verdict is not Verdict.WAIT:
            self._tally = None
        if verdict is not Verdict.BARGE_IN:
            return None
        self.end()
        self.user_onset = tally.onset_sample
        return SpeechStarted(
            tally.onset_sample * 1000 // VAD_RATE, last.end_sample * 1000 // VAD_RATE
        )

    def window(self, speech: bool, speaking: bool, end_sample: int, s: ShimSettings) -> bool:
        """One VAD window (``speech``: the VAD calls it speech; ``speaking``: within a run
        of the VAD's): whether someone else's speech still goes on at it."""
        if not self.active:
            return False
        if speech:
            self._last = max(self._last, end_sample)
        elif not speaking and end_sample - self._last >= ms_to_sample(s.background_pause_ms):
            self.end()
        return self.active
