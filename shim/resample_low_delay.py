"""The client's microphone audio to the 16 kHz VAD timeline, about 1 ms behind.

``soxr``'s streaming resampler (``shim/audio.py``) works in blocks: at its medium
quality, 24 kHz to 16 kHz, it hands back ~525 samples every second or third 20 ms
append, so the newest 5-38 ms of what the client sent reaches the VAD one or two
appends late, by an amount that depends on where an utterance falls among its
blocks. Every barge-in decision waits for that (``shim/overlap_decision.py``), so
the microphone's timeline uses this one instead: a polyphase windowed-sinc filter
evaluated per output sample, which returns every sample whose filter support has
arrived (``HALF_TAPS`` input samples behind the newest).

Sample ``k`` of the output is the input at time ``k * in_rate / out_rate`` (the same
alignment as ``soxr``'s, whose delay is trimmed too), so sample times on the
timeline do not move.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from shim.audio import Int16Array

Float64Array = npt.NDArray[np.float64]

HALF_TAPS = 24  # input samples each side of an output's time (1 ms at 24 kHz)
KAISER_BETA = 8.0  # about 80 dB of stopband
CUTOFF = 0.9  # of the lower of the two Nyquist frequencies
# Up to this many filter phases (24 kHz -> 16 kHz has 2), one product per phase.
FEW_PHASES = 8


def _phase_table(up: int, down: int) -> Float64Array:
    """Weights [phase, tap] for an output at input time ``base + phase / up``; tap
    ``j`` weighs input sample ``base - HALF_TAPS + 1 + j``."""
    cut = CUTOFF * min(1.0, up / down)  # cycles per input sample, times 2
    offsets = np.arange(-HALF_TAPS + 1, HALF_TAPS + 1, dtype=np.float64)
    frac = np.arange(up, dtype=np.float64)[:, None] / up
    t = frac - offsets[None, :]  # the output's time minus each tap's
    window = np.kaiser(2 * HALF_TAPS + 1, KAISER_BETA)
    # The window evaluated at t (continuous), by interpolating its samples.
    w = np.interp(t, np.arange(-HALF_TAPS, HALF_TAPS + 1, dtype=np.float64), window)
    table: Float64Array = cut * np.sinc(cut * t) * w
    norm: Float64Array = table / table.sum(axis=1, keepdims=True)  # unity gain at DC, each phase
    return norm


class LowDelayResampler:
    """Chunk-by-chunk int16 resampler with the interface of ``StreamResampler``."""

    __slots__ = (
        "_buf",
        "_buf_start",
        "_down",
        "_n_in",
        "_n_out",
        "_table",
        "_up",
        "in_rate",
        "out_rate",
    )

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate, self.out_rate = in_rate, out_rate
        g = math.gcd(in_rate, out_rate)
        self._up, self._down = out_rate // g, in_rate // g
        self._table = _phase_table(self._up, self._down)
        # Input kept (float), from absolute input sample _buf_start; zeros before 0.
        self._buf = np.zeros(HALF_TAPS, dtype=np.float64)
        self._buf_start = -HALF_TAPS
        self._n_in = 0
        self._n_out = 0

    def process(self, samples: Int16Array, last: bool = False) -> Int16Array:
        if self._up == self._down:
            return samples
        x = np.asarray(samples, dtype=np.float64).reshape(-1)
        self._buf = np.concatenate((self._buf, x)) if x.size else self._buf
        self._n_in += x.size
        if last:
            # Every output up to the input's end, the missing support read as silence.
            stop = -(-self._n_in * self._up // self._down)
            self._buf = np.concatenate((self._buf, np.zeros(HALF_TAPS)))
        else:
            # Output k needs input up to floor(k * down / up) + HALF_TAPS.
            stop = (self._up * (self._n_in - HALF_TAPS) - 1) // self._down + 1
        out = self._run(max(self._n_out, stop))
        if last:
            self._buf = self._buf[: self._buf.size - HALF_TAPS]
        return out

    def flush(self) -> Int16Array:
        return self.process(np.zeros(0, dtype=np.int16), last=True)

    def _run(self, stop: int) -> Int16Array:
        ks = np.arange(self._n_out, stop, dtype=np.int64)
        self._n_out = stop
        if not ks.size:
            return np.zeros(0, dtype=np.int16)
        first = ks * self._down // self._up - HALF_TAPS + 1 - self._buf_start
        phase = ks * self._down % self._up
        if self._up <= FEW_PHASES:
            # Every up-th output has the same phase, its support down samples on: one
            # matrix-vector product per phase over a strided view (no gather).
            y = np.empty(ks.size, dtype=np.float64)
            size = self._buf.itemsize
            for j in range(min(self._up, ks.size)):
                count = (ks.size - j + self._up - 1) // self._up
                rows = np.ndarray(
                    (count, 2 * HALF_TAPS),
                    np.float64,
                    buffer=self._buf,
                    offset=int(first[j]) * size,
                    strides=(self._down * size, size),
                )
                y[j :: self._up] = rows @ self._table[phase[j]]
        else:
            idx = first[:, None] + np.arange(2 * HALF_TAPS)[None, :]
            y = np.einsum("ij,ij->i", self._buf[idx], self._table[phase])
        # Keep what the next output's support starts at.
        nxt = stop * self._down // self._up - HALF_TAPS + 1
        drop = max(0, nxt - self._buf_start)
        self._buf, self._buf_start = self._buf[drop:], self._buf_start + drop
        out: Int16Array = np.clip(np.rint(y), -32768, 32767).astype(np.int16)
        return out
