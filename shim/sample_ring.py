"""The last samples of a signal, by absolute sample index (the overlap evidence's).

``shim/overlap_evidence.py`` measures each VAD window on the microphone and the
echo-suppressed audio under it. The VAD's results for a window may come back well
after its audio (a busy batch, a VAD thread behind under load), so each signal is kept
for a while: ``size`` samples. What is read from before that (or after the newest
sample) reads as zeros.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]


class SampleRing:
    """The last ``size`` samples of a signal, by absolute sample index.

    Sample ``i`` lives at ``i % size``: adding writes in place, with no copy of the
    whole ring per chunk (this runs for every microphone frame of every session)."""

    __slots__ = ("_buf", "end", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._buf = np.zeros(size, dtype=np.float32)
        self.end = 0  # absolute index after the newest sample

    def add(self, x: Float32Array, start: int) -> None:
        if start != self.end:  # a gap or a restart: what was kept no longer lines up
            self._buf[:] = 0.0
        end = start + x.size
        x = x[-self.size :]
        self._write(end - x.size, x)
        self.end = end

    def _write(self, at: int, x: Float32Array) -> None:
        n = self.size
        pos = at % n
        first = min(x.size, n - pos)
        self._buf[pos : pos + first] = x[:first]
        self._buf[: x.size - first] = x[first:]

    def get(self, start: int, end: int) -> Float32Array:
        """Samples [start, end); zeros where nothing is kept."""
        n = self.size
        lo, hi = max(start, self.end - n), min(end, self.end)
        pos = lo % n
        if lo == start and hi == end and pos + hi - lo <= n:  # most reads: one slice
            return self._buf[pos : pos + hi - lo].copy()
        out = np.zeros(max(0, end - start), dtype=np.float32)
        if hi > lo:
            first = min(hi - lo, n - pos)
            out[lo - start : lo - start + first] = self._buf[pos : pos + first]
            out[lo - start + first : hi - start] = self._buf[: hi - lo - first]
        return out
