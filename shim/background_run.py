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
* or until the user's own voice is heard in it: speech at the user's level, as begins an
  overlap in a dismissed run (``user_run``), is the user's turn from those windows.

Sans-I/O: VAD-timeline samples in, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from shim.input_history import ms_to_sample
from shim.overlap_decision import DecisionParams, Judged
from shim.overlap_evidence import OverlapEvidence
from shim.overlap_onset import user_run
from shim.settings import VAD_RATE, ShimSettings
from shim.vad_gate import WINDOW_MS, SpeechStarted


class BackgroundRun:
    __slots__ = ("_last", "active", "user_onset")

    def __init__(self) -> None:
        self.active = False  # someone else's speech goes on (or paused, not yet long)
        self._last = 0  # VAD sample where its last speech window ended
        # Where the user's voice was heard in it (VAD sample), until the session takes it.
        self.user_onset: int | None = None

    def dismissed(self, theirs: bool, end_sample: int) -> None:
        """An overlap was released at the window ending at ``end_sample``; ``theirs``: its
        run was judged someone else's (``shim/overlap_hold.py``, ``dismisses``)."""
        if theirs:
            self.active, self._last = True, max(self._last, end_sample)

    def end(self) -> None:
        """It is over, or was the user's after all (a barge-in, a turn)."""
        self.active = False

    def user_voice(
        self, recent: Sequence[Judged], evidence: OverlapEvidence, p: DecisionParams, run: bool
    ) -> SpeechStarted | None:
        """After the answer, in a ``run`` of the VAD's: the user's own voice in the last
        windows of ``recent`` (at the user's level, as begins an overlap in a dismissed
        run), the run's turn from those windows on; it is no longer someone else's."""
        n = user_run(recent, True, evidence.user_level_db, p) if run else 0
        if not n:
            return None
        first, last = recent[-n].ev.end_sample, recent[-1].ev.end_sample
        self.active, self.user_onset = False, first - WINDOW_MS * VAD_RATE // 1000
        return SpeechStarted(self.user_onset * 1000 // VAD_RATE, last * 1000 // VAD_RATE)

    def window(self, speech: bool, speaking: bool, end_sample: int, s: ShimSettings) -> bool:
        """One VAD window (``speech``: the VAD calls it speech; ``speaking``: within a run
        of the VAD's): whether someone else's speech still goes on at it."""
        if not self.active:
            return False
        if speech:
            self._last = max(self._last, end_sample)
        elif not speaking and end_sample - self._last >= ms_to_sample(s.background_pause_ms):
            self.active = False
        return self.active
