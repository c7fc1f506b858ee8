"""The client's recent input audio at 16 kHz, on the session's input timeline.

Every sample the client sent is counted (``end``), but only recent audio is kept:
enough for prefix padding between turns, up to ``max_turn_ms`` during one. A turn
is committed as the audio between two times on that timeline.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from shim.audio import Int16Array
from shim.settings import VAD_RATE


def ms_to_sample(ms: int) -> int:
    return ms * VAD_RATE // 1000


class InputHistory:
    def __init__(self) -> None:
        self._chunks: deque[Int16Array] = deque()
        self._start = 0  # timeline sample of the first kept sample
        self._len = 0  # samples kept
        self.end = 0  # timeline sample after the last one the client sent

    @property
    def end_ms(self) -> int:
        return self.end * 1000 // VAD_RATE

    def append(self, s16: Int16Array, keep_ms: int) -> int:
        """Add input; keep at least the last ``keep_ms`` of it. Returns its start sample."""
        start = self.end
        self._chunks.append(s16)
        self._len += int(s16.size)
        self.end += int(s16.size)
        keep = ms_to_sample(keep_ms)
        while self._chunks and self._len - self._chunks[0].size >= keep:
            self._pop()
        return start

    def between(self, start_ms: int, end_ms: int | None = None) -> Int16Array:
        """16 kHz input between two audio times (clamped to what is kept)."""
        if not self._chunks:
            return np.zeros(0, dtype=np.int16)
        data = np.concatenate(list(self._chunks))
        lo = max(0, ms_to_sample(start_ms) - self._start)
        hi = data.size if end_ms is None else max(lo, ms_to_sample(end_ms) - self._start)
        return data[lo:hi]

    def drop_before(self, ms: int) -> None:
        """Forget input before ``ms`` (a committed or cleared buffer)."""
        cut = ms_to_sample(ms)
        while self._chunks and self._start + self._chunks[0].size <= cut:
            self._pop()

    def _pop(self) -> None:
        dropped = self._chunks.popleft()
        self._len -= int(dropped.size)
        self._start += int(dropped.size)
