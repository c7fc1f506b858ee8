"""24 kHz to 16 kHz as libsamplerate's fastest sinc converter does it, in one matrix product.

At a 2/3 ratio the converter's outputs fall on two phases only: output ``n`` is
centred on input ``1.5 n``, so even outputs sit on an input sample and odd ones half
way between two. Each phase is a fixed FIR filter, and the converter returns output
``n`` once input ``1.5 n + 30`` has arrived (``AHEAD``). Its per-output loop
interpolates the coefficient table for every tap (~30 µs per 20 ms append); the same
filters as a strided matrix product cost a third of that. The taps are read off the
installed converter itself (its answer to an impulse on each of three input
phases), so they are its filter, not a copy of it. Its outputs are matched to 1 LSB
(``tests/test_resample_low_delay.py``): 22 of the dev corpus's 4 million samples
differ by one, where the converter's float32 rounding falls the other way.
"""

from __future__ import annotations

import numpy as np
import samplerate

from shim.audio import Int16Array

IN_RATE, OUT_RATE = 24000, 16000
# Output n needs inputs up to 1.5 n + AHEAD before the converter returns it.
AHEAD = 30
# Each pair of outputs (2m, 2m + 1) reads the 60 inputs from 3m - HISTORY: the even
# output's taps span 3m - 28 .. 3m + 28, the odd one's 3m - 27 .. 3m + 30.
HISTORY = 29
SPAN = 60
# Silence fed at the end so that the last outputs have their support.
FLUSH_PAD = 256


def _taps() -> np.ndarray | None:
    """The two phases' taps as the columns of a (SPAN, 2) matrix: row ``i`` weighs
    input ``3m - HISTORY + i`` for the outputs ``2m`` and ``2m + 1``. None when the
    installed converter is not the one measured here (a longer filter, or outputs
    returned at other moments): the caller then keeps the converter's own loop."""
    n = 800
    twice_offset: dict[int, float] = {}  # 2 * (input index - 1.5 n) -> tap
    for p in (300, 301, 302):  # the three input phases cover every half-sample offset
        x = np.zeros(n, dtype=np.float32)
        x[p] = 1.0
        y = samplerate.Resampler("sinc_fastest", channels=1).process(x, OUT_RATE / IN_RATE)
        # Returned once input 1.5 k + AHEAD has arrived: outputs 0 .. k - 1 for n inputs.
        if y.size != -(-(2 * n - 2 * AHEAD) // 3):
            return None
        for k, v in enumerate(np.asarray(y, dtype=np.float64)):
            if v != 0.0 and not -2 * HISTORY <= 2 * p - 3 * k <= 2 * (SPAN - HISTORY - 1) - 3:
                return None  # a tap outside the span
            twice_offset[2 * p - 3 * k] = float(v)
    taps = np.zeros((SPAN, 2))
    for i in range(SPAN):
        off = i - HISTORY  # input index - 3m
        taps[i, 0] = twice_offset.get(2 * off, 0.0)  # output 2m, centred on 3m
        taps[i, 1] = twice_offset.get(2 * off - 3, 0.0)  # output 2m + 1, on 3m + 1.5
    return taps


TAPS = _taps()
# The int16 bounds as float32 arrays, sliced to the outputs of a call (most calls): an
# array operand skips numpy's conversion of a scalar one, and bounds the same way.
_BOUNDS = 4096
_LOW = np.full(_BOUNDS, -32768.0, dtype=np.float32)
_HIGH = np.full(_BOUNDS, 32767.0, dtype=np.float32)


class Polyphase24To16:
    """Chunk-by-chunk int16 24 kHz -> 16 kHz, the outputs ``LowDelayResampler``'s
    converter gives at the same moments."""

    __slots__ = ("_base", "_buf", "_n_in", "_n_out")

    def __init__(self) -> None:
        self._buf = np.zeros(HISTORY)  # inputs from absolute index _base (silence before 0)
        self._base = -HISTORY
        self._n_in = 0
        self._n_out = 0

    def process(self, samples: Int16Array, last: bool = False) -> Int16Array:
        x = np.asarray(samples).reshape(-1)
        self._n_in += x.size
        parts = (self._buf, x, np.zeros(FLUSH_PAD)) if last else (self._buf, x)
        buf = self._buf = np.concatenate(parts, dtype=np.float64)
        if last:  # every output up to the input's end, and none for the padding
            end = -(-self._n_in * OUT_RATE // IN_RATE)
        else:  # the outputs n with 1.5 n + AHEAD < inputs so far
            end = -(-(2 * self._n_in - 2 * AHEAD) // 3)
        first = self._n_out
        if end <= first:
            return np.zeros(0, dtype=np.int16)
        m0, m1 = first // 2, (end + 1) // 2
        start = 3 * m0 - HISTORY - self._base
        # Rows of SPAN inputs, each 3 on from the last, as a view (numpy checks that
        # it lies inside the buffer): one product per pair of outputs.
        step = buf.itemsize
        rows = np.ndarray((m1 - m0, SPAN), np.float64, buf, start * step, (3 * step, step))
        assert TAPS is not None  # (LowDelayResampler makes one only then)
        y = np.dot(rows, TAPS).reshape(-1)[first - 2 * m0 : end - 2 * m0]
        self._n_out = end
        keep = 3 * (end // 2) - HISTORY
        self._buf = buf[keep - self._base :]
        self._base = keep
        # The converter's float32 output, scaled to int16 as LowDelayResampler does
        # (its 1/32768 and 32768 are powers of two: the same rounding).
        z = y.astype(np.float32)
        np.rint(z, out=z)
        n = z.size
        if n <= _BOUNDS:
            np.maximum(z, _LOW[:n], out=z)
            np.minimum(z, _HIGH[:n], out=z)
        else:
            np.maximum(z, -32768.0, out=z)
            np.minimum(z, 32767.0, out=z)
        out: Int16Array = z.astype(np.int16)
        return out
