"""The benchmark client's loudspeaker (``bench/bargein.py``): plays received assistant
audio on a real-time clock, and gives the microphone its echo.

The echo through a room (``bench/echo_path.py``) is rendered as a stream, a block per
microphone chunk in order, from the loudspeaker's output at the chunk's own time: cheap
enough that six sessions in one process keep real time (``render`` per chunk did not,
and a late microphone carries its echo late, as no real client's does).
"""

from __future__ import annotations

import time

import numpy as np
from bargein_cases import RATE
from echo_path import EchoPath, EchoStream


class Speaker:
    """The client's loudspeaker: plays received assistant audio on a real-time clock."""

    def __init__(self) -> None:
        self.audio = np.zeros(0, dtype=np.float32)
        self.start: float | None = None  # wall time the first sample played
        self.play_end = 0.0
        self.received = 0  # samples of assistant audio received
        self._stream: EchoStream | None = None  # the echo through a room, once playing
        self._stream_pos = 0  # loudspeaker sample the stream's next block starts at

    def add(self, pcm: np.ndarray, now: float) -> None:
        if self.start is None:
            self.start = now
        begin = max(self.play_end, now)
        # Write at the position it will play (gaps are silence).
        pos = int((begin - self.start) * RATE)
        need = pos + pcm.size
        if need > self.audio.size:
            grown = np.zeros(max(need, 2 * self.audio.size), np.float32)
            grown[: self.audio.size] = self.audio
            self.audio = grown
        self.audio[pos:need] = pcm
        self.play_end = begin + pcm.size / RATE
        self.received += pcm.size

    def played_ms(self, now: float) -> int:
        """Assistant audio played so far (not wall time: pauses in the stream are not
        audio), as a GA client reports it in ``conversation.item.truncate``."""
        queued = max(0.0, self.play_end - now) * RATE
        return max(0, int((self.received - queued) * 1000 / RATE))

    def clear(self) -> None:
        now = time.monotonic()
        self.received -= int(max(0.0, self.play_end - now) * RATE)  # flushed, never played
        self.play_end = 0.0
        if self.start is not None:
            self.audio[max(0, int((now - self.start) * RATE)) :] = 0.0

    def echo(self, t0: float, n: int, path: EchoPath | None) -> np.ndarray:
        """What the microphone picks up of the speaker from wall time t0, for n samples:
        the speaker's output itself, or through ``path`` (a loudspeaker in a room; the
        calls' spans follow one another, a chunk each)."""
        if path is None:
            return self.heard(t0, n)
        if self.start is None:
            return np.zeros(n, dtype=np.float32)  # nothing played yet: the room is quiet
        if self._stream is None:
            self._stream = EchoStream(path, n)
            self._stream_pos = round((t0 - self.start) * RATE)
        out = self._stream.next(self.heard_at(self._stream_pos, n))
        self._stream_pos += n
        return out

    def heard(self, t0: float, n: int) -> np.ndarray:
        """What the speaker emits from wall time t0 for n samples."""
        if self.start is None:
            return np.zeros(n, dtype=np.float32)
        return self.heard_at(int((t0 - self.start) * RATE), n)

    def heard_at(self, pos: int, n: int) -> np.ndarray:
        """What the speaker emits from its sample ``pos`` for n samples."""
        out = np.zeros(n, dtype=np.float32)
        lo, hi = max(pos, 0), min(pos + n, self.audio.size)
        if hi > lo:
            out[lo - pos : hi - pos] = self.audio[lo:hi]
        return out
