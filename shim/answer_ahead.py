"""An answer the upstream began ahead of the proxy's VAD (``Turns.answer_began``).

An upstream that takes turns answers as soon as it heard the turn end. A client that
sends its audio faster than real time, or a VAD behind under load, leaves the proxy's
VAD still judging audio from before the answer's start: that audio is the turn being
answered, not speech over the answer. What follows in the run is speech over the
answer only from the VAD's first window with audio from after the answer's start.
Positions are input samples (``ActiveResponse.started_at_sample``); a window's audio
is the microphone's under it (``OverlapEvidence.mic_window``).
"""

from __future__ import annotations

from shim.output import ActiveResponse
from shim.overlap_evidence import OverlapEvidence


class AnswerAhead:
    __slots__ = ("_at", "_judged")

    def __init__(self) -> None:
        self._judged = 0  # the end of the last window the VAD judged
        self._at: tuple[int, str] | None = None  # an answer's start ahead of it, its id

    @property
    def judged(self) -> int:
        """The end (input sample) of the last window the VAD judged."""
        return self._judged

    @property
    def pending(self) -> bool:
        """An answer began that the VAD's windows have not reached yet."""
        return self._at is not None

    def began(self, evidence: OverlapEvidence, resp: ActiveResponse | None) -> int | None:
        """``resp`` began: its start if the VAD has reached it, else None (kept)."""
        if resp is None:
            return None
        at = resp.started_at_sample
        if evidence.mic_window(self._judged)[1] < at:
            self._at = (at, resp.response_id)
            return None
        return at

    def reached(
        self, evidence: OverlapEvidence, resp: ActiveResponse | None, end_sample: int
    ) -> int | None:
        """The VAD's window ending at ``end_sample`` comes: the start of the answer it
        is the first to reach (once), if that answer still goes on."""
        at = self._at
        self._judged = end_sample
        if at is None or evidence.mic_window(end_sample)[1] <= at[0]:
            return None
        self._at = None
        live = resp is not None and resp.response_id == at[1] and resp.live
        return at[0] if live else None
