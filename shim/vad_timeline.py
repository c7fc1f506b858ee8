"""Where the VAD's windows lie on the session's input timeline.

The edge's VAD stream counts only the samples it was given (``AnalyzeAudio``), and
reports each window by that count (``VadWindow.end_sample``). Everything else in the
session (the input history a turn's audio is cut from, the overlap evidence, the
times in ``speech_started``) is on the input timeline, which goes on while turn
detection is off and nothing is given to the VAD (push-to-talk). After such a
stretch the two differ by what the VAD never heard; this keeps, for each run of
audio given to the VAD, where it began on both, for as long as its windows may
still come back (they come back in order).
"""

from __future__ import annotations

from collections import deque


class VadTimeline:
    __slots__ = ("_runs", "fed", "judged")

    def __init__(self) -> None:
        # (VAD sample, input sample) where each run of audio given to the VAD began.
        self._runs: deque[tuple[int, int]] = deque([(0, 0)])
        self.fed = 0  # samples given to the VAD so far
        self.judged = 0  # of those, the samples its windows have come back for

    def given(self, start: int, n: int) -> None:
        """``n`` samples of the input timeline from ``start`` go to the VAD."""
        vad_at, input_at = self._runs[-1]
        if start != input_at + self.fed - vad_at:  # audio the VAD did not hear came between
            if self.fed == vad_at:
                self._runs[-1] = (vad_at, start)
            else:
                self._runs.append((self.fed, start))
        self.fed += n

    def to_input(self, vad_end: int) -> int:
        """The input sample where the VAD window ending at ``vad_end`` ends."""
        self.judged = max(self.judged, vad_end)
        while len(self._runs) > 1 and self._runs[1][0] < vad_end:
            self._runs.popleft()
        vad_at, input_at = self._runs[0]
        return input_at + vad_end - vad_at

    @property
    def unjudged(self) -> int:
        """Samples given to the VAD that no window has come back for yet: input sent
        faster than real time waits in the VAD's queue for this long."""
        return max(0, self.fed - self.judged)
