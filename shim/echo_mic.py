"""The recent microphone the echo suppressor's delay search reads (``shim/echo.py``).

The last ``size`` samples, kept in a buffer twice that long: each chunk is written
after the last, and only when the buffer is full does the live span move to its
front, so a 20 ms chunk costs a copy of itself, not of the whole window.

Before ``size`` samples came (since the start, or since a gap cleared it) the window
is mostly zeros, and a search on it weighs only the few samples there: a chunk or two
of the user's voice that happens to resemble some lag of the answer (the same voice,
as a stand-in model's answer is) is "explained" by it. ``full`` says when the window
is the microphone's own.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]


class RecentMic:
    def __init__(self, size: int) -> None:
        self.size = size
        self._buf = np.zeros(2 * size, dtype=np.float32)
        self._end = size  # the newest sample's index in _buf, plus one
        self._filled = 0  # samples added since the start or the last clear, up to size

    @property
    def full(self) -> bool:
        """The last ``size`` samples are all the microphone's (none from before a clear)."""
        return self._filled >= self.size

    @property
    def samples(self) -> Float32Array:
        """The last ``size`` samples, oldest first (zeros before any were added); a view."""
        return self._buf[self._end - self.size : self._end]

    def add(self, x: Float32Array) -> None:
        n = x.size
        self._filled = min(self.size, self._filled + n)
        if n >= self.size:
            self._buf[: self.size] = x[-self.size :]
            self._end = self.size
            return
        if self._end + n > self._buf.size:
            keep = self.size - n
            self._buf[:keep] = self._buf[self._end - keep : self._end]
            self._end = keep
        self._buf[self._end : self._end + n] = x
        self._end += n

    def clear(self) -> None:
        """Silence: what was kept no longer lines up with what comes next."""
        self._buf[:] = 0.0
        self._filled = 0
