"""When the microphone's audio was, on the clock the assistant's answer plays by.

The relay gate (``relay_gate.py``) tells audio heard while the answer played (its
echo, a backchannel) from audio after it. The answer plays on the client's clock, as
the playback clock estimates it (``shim/playback.py``); the microphone is counted in
samples (the input timeline, ``shim/input_history.py``). This maps one onto the other:

* a client streaming in real time: its newest sample is now;
* one that sent nothing for a while (``PAUSE_MS``): its stream starts again now, it
  does not go back to fill the pause;
* one that sends faster than real time (a recording, a test, a client catching up):
  its audio counts at its own pace from where its stream began, ahead of now. A turn
  it sends at once right after an answer is after that answer on this clock, however
  fast it arrives.

Time is the edge's ``now`` of the appends (ms); nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections import deque

from shim.settings import VAD_RATE

# A stream this far behind now had stopped: it starts again from now.
PAUSE_MS = 500
# Restarts remembered; older audio maps by the oldest one kept (held audio is bounded).
KEPT = 32


class InputClock:
    def __init__(self) -> None:
        # (sample, ms): where the stream (re)started, and when; both increasing.
        self._starts: deque[tuple[int, float]] = deque(maxlen=KEPT)

    def on_audio(self, start: int, now: float) -> None:
        """An append whose first sample is ``start`` arrived at ``now``."""
        if not self._starts or self.time_of(start) < now - PAUSE_MS:
            self._starts.append((start, now))

    def time_of(self, sample: int) -> float:
        """When input sample ``sample`` was, in ms."""
        if not self._starts:
            return 0.0
        at, ms = self._starts[-1]  # the usual case: the newest audio, since the last start
        if sample < at:
            first = self._starts[0]
            at, ms = next(((s, t) for s, t in reversed(self._starts) if sample >= s), first)
        return ms + (sample - at) * 1000 / VAD_RATE

    def sample_at(self, ms: float) -> int:
        """The first input sample at or after time ``ms`` (one after a pause is the
        sample the stream started again at)."""
        later: int | None = None
        for at, t in reversed(self._starts):
            if ms >= t:
                sample = at + math.ceil((ms - t) * VAD_RATE / 1000)
                return sample if later is None else min(sample, later)
            later = at
        if not self._starts:
            return 0
        at, t = self._starts[0]
        return at + math.ceil((ms - t) * VAD_RATE / 1000)
