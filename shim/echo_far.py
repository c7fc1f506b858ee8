"""The far end of echo suppression: the assistant audio the proxy sent, on the mic's
timeline (16 kHz samples).

Far audio is kept in a ring for ``history`` samples beyond the delay search and
``behind`` samples before it (for readers of echo already past: the close-voice
measure's half second up to the VAD's window, ``shim/turns.py``, which lags the mic
by the suppressor's frame, part of a VAD window and the VAD's queue), and what was
sent ahead of playback waits in a queue (bounded by ``max_ahead``). Power
spectra of far frames, on an 8 ms grid, are computed once and cached for the
residual suppressor (``shim/echo.py``).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

from shim.echo_clock import MicClock

Int16Array = npt.NDArray[np.int16]
Float32Array = npt.NDArray[np.float32]

SILENT = 3e-4  # far peaks below this (-70 dBFS) play as silence: dither, not speech
FRAME = 256  # STFT frame of the residual suppressor: 16 ms at 16 kHz
HOP = FRAME // 2
GRID = HOP  # far frames are analysed every GRID samples (8 ms)
MAX_FRAMES = 8  # frames analysed together (bounds the far-spectrum cache)
_NO_FRAME = -(2**40)  # an empty cache slot (a frame index no stream reaches)
# sqrt of a periodic Hann: analysis and synthesis windows whose product overlap-adds to 1.
WIN = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)).astype(np.float32)


class FarReference:
    def __init__(
        self,
        max_delay: int,
        window: int,
        jitter: int,
        tail: int,
        history: int,
        max_ahead: int,
        behind: int = 0,
    ) -> None:
        self.max_delay, self.window, self.jitter, self.tail = max_delay, window, jitter, tail
        self.max_ahead, self.behind = max_ahead, behind
        # Ring of far audio for absolute samples [self._base, self._base + size). What
        # ``behind`` adds sits before the delay search, so where the ring ends (the mic's
        # end plus ``history``) and what waits ahead do not depend on it.
        self._size = max_delay + window + jitter + tail + behind + history
        self._ring = np.zeros(2 * self._size, dtype=np.float32)  # linear, compacted
        self._ring_start = 0  # absolute sample of self._ring[0]
        self._base = 0  # far audio is kept for absolute [_base, _base + _size)
        # Power spectra of far frames on a GRID-sample grid, by frame index mod slots.
        slots = (2 * jitter + tail + (MAX_FRAMES + 2) * HOP) // GRID
        self._fp = np.zeros((slots, FRAME // 2 + 1), dtype=np.float32)
        self._fp_ids = np.full(slots, _NO_FRAME, dtype=np.int64)
        self._ahead: deque[tuple[int, Float32Array]] = deque()  # far beyond the ring's end
        self.ahead_samples = 0
        self.dropped_samples = 0
        # After the last nonzero far sample ever recorded: past it (and the delay range)
        # nothing can echo, and ``active`` answers without reading the ring.
        self._loud_end = 0
        # Where the microphone is now, for placing far audio (``shim/echo_clock.py``).
        self.clock = MicClock()

    @property
    def loud_end(self) -> int:
        """The mic sample after the last far audio recorded that can echo."""
        return self._loud_end

    @property
    def ring_bytes(self) -> int:
        return int(self._ring.nbytes)

    def add(self, samples: Int16Array, at_sample: int) -> None:
        """Record assistant audio that plays from mic sample ``at_sample`` on."""
        far = samples.astype(np.float32) / 32768.0
        if self.ahead_samples + far.size > self.max_ahead:
            self.dropped_samples += far.size  # bounded memory beats a perfect reference
            return
        if far.size and np.any(far):
            self._loud_end = max(self._loud_end, at_sample + far.size)
        if self._ahead and at_sample < self._ahead[-1][0]:  # out of order: rare
            self._ahead = deque(sorted([*self._ahead, (at_sample, far)], key=lambda e: e[0]))
        else:
            self._ahead.append((at_sample, far))
        self.ahead_samples += far.size
        self._place()

    def clear(self, from_sample: int) -> None:
        """Playback stopped at ``from_sample`` (barge-in, clear): forget later far audio."""
        self._ahead = deque(
            (at, far[: max(0, from_sample - at)]) for at, far in self._ahead if at < from_sample
        )
        self.ahead_samples = sum(far.size for _, far in self._ahead)
        lo = max(from_sample, self._base)
        if lo < self._base + self._size:
            self._write(lo, None)

    def active(self, start_sample: int, end_sample: int) -> bool:
        """Could mic samples [start, end) hold echo? (far audio within the delay range)"""
        lo = start_sample - self.max_delay
        if self._loud_end <= lo:  # most of the time: nothing plays
            return False
        far = self.samples(lo, end_sample)
        if far.size and float(np.max(np.abs(far))) > SILENT:
            return True
        for at, far in self._ahead:  # sorted by start
            if at >= end_sample:
                return False
            if at + far.size > lo and np.max(np.abs(far)) > SILENT:
                return True
        return False

    def samples(self, start: int, end: int) -> Float32Array:
        """Far samples for absolute [start, end); zeros where nothing was placed."""
        out = np.zeros(max(0, end - start), dtype=np.float32)
        lo, hi = max(start, self._base), min(end, self._base + self._size)
        if hi > lo:
            off = self._base - self._ring_start
            out[lo - start : hi - start] = self._ring[off + lo - self._base : off + hi - self._base]
        return out

    def held(self, start: int, end: int) -> Float32Array | None:
        """``samples``, or None where the ring has slid past ``start``: far audio taken
        for only part of a span (zeros for the rest) would leave a step no voice made."""
        return self.samples(start, end) if start >= self._base else None

    def _write(self, lo: int, values: Float32Array | None) -> None:
        """Add ``values`` to (or, if None, zero) the far audio from ``lo`` to the ring's end."""
        off = lo - self._ring_start
        if values is None:
            self._ring[off : self._base - self._ring_start + self._size] = 0.0
            hi = self._base + self._size
        else:
            self._ring[off : off + values.size] += values
            hi = lo + values.size
        # Cached far spectra of frames that overlap the change are stale now.
        frames = self._fp_ids * GRID
        self._fp_ids[(frames < hi) & (frames + FRAME > lo)] = _NO_FRAME

    def _place(self) -> None:
        """Move far audio that now fits into the ring; keep the rest ahead.

        The queue is sorted by start, so only its head is looked at: a long reply
        sent in many small deltas costs nothing until its turn comes.
        """
        end = self._base + self._size
        rest: list[tuple[int, Float32Array]] = []
        while self._ahead and self._ahead[0][0] < end:
            at, far = self._ahead.popleft()
            self.ahead_samples -= far.size
            lo, hi = max(at, self._base), min(at + far.size, end)
            if hi > lo:
                self._write(lo, far[lo - at : hi - at])
            if at + far.size > end:
                rest.append((end, far[end - at :]))
        for entry in reversed(rest):  # they start at `end`, before everything left
            self._ahead.appendleft(entry)
            self.ahead_samples += entry[1].size

    def advance(self, mic_end: int) -> None:
        """Slide the ring so it still holds everything a delay search can reach, and
        ``behind`` more."""
        base = mic_end - self.window - self.max_delay - self.jitter - self.tail - self.behind
        if base <= self._base:
            return
        self._base = base
        if base + self._size > self._ring_start + self._ring.size:
            # Compact: the live span moves to the front, the rest is silence. The
            # buffer holds two spans, so this copy happens once per span of audio.
            keep = self._ring[base - self._ring_start :].copy()
            self._ring[:] = 0.0
            self._ring[: keep.size] = keep
            self._ring_start = base
        self._place()

    def power(self, starts: npt.NDArray[np.int64]) -> Float32Array:
        """Per-bin echo power bound for far frames at ``starts`` (the delay applied).

        The loudest far spectrum within +-jitter of the delay (a jump in playback
        timing), or, where larger, the mean over the reverberation tail before it.
        Far frames sit on an 8 ms grid and are analysed once, then cached.
        """
        first = (starts - self.jitter - self.tail) // GRID
        n_ids = int((starts[0] + self.jitter) // GRID - first[0]) + 1
        ids = first[:, None] + np.arange(n_ids)
        slots = ids % self._fp_ids.size
        span = np.arange(first[0], first[-1] + n_ids)  # the frames' ids: one contiguous run
        missing = span[self._fp_ids[span % self._fp_ids.size] != span]
        if missing.size:
            lo = int(missing[0]) * GRID
            far = self.samples(lo, int(missing[-1]) * GRID + FRAME)
            view = np.lib.stride_tricks.sliding_window_view(far, FRAME)
            spec = np.fft.rfft(view[(missing - missing[0]) * GRID] * WIN, axis=1)
            self._fp[missing % self._fp_ids.size] = spec.real**2 + spec.imag**2
            self._fp_ids[missing % self._fp_ids.size] = missing
        power = self._fp[slots]  # (frames, ids, bins)
        n_tail = self.tail // GRID
        direct: Float32Array = power[:, n_tail:].max(axis=1)
        if n_tail == 0:
            return direct
        bound: Float32Array = np.maximum(direct, power[:, : n_tail + 1].mean(axis=1))
        return bound
