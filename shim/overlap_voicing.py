"""How periodic a window of sound is: one voice close to the microphone, or not.

One voice close to the microphone is strongly periodic at its pitch; several
distant voices, reverberant sound and noise are not (``shim/overlap_evidence.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]

MIN_LAG, MAX_LAG = 40, 256  # pitch lags at 16 kHz: 400 Hz down to 62.5 Hz
_LAGS = np.arange(MIN_LAG, MAX_LAG + 1)


def voicing(x: Float32Array) -> float:
    """Peak normalised autocorrelation over pitch lags (0 for silence).

    Normalised by the energies of the two overlapping parts, so a steady vowel
    scores near 1 whatever its level.
    """
    x = x - float(x.mean())
    n = x.size
    if n <= MAX_LAG or float(np.dot(x, x)) <= 1e-9:
        return 0.0
    size = 1 << (2 * n - 1).bit_length()  # the power of two from 2n up
    spec = np.fft.rfft(x, size)
    r = np.fft.irfft(spec.real**2 + spec.imag**2, size)[: MAX_LAG + 1]
    sq = np.concatenate(([0.0], np.cumsum(x.astype(np.float64) ** 2)))
    head = sq[n - _LAGS]  # energy of x[:n - lag]
    tail = sq[n] - sq[_LAGS]  # energy of x[lag:]
    norm = np.sqrt(head * tail) + 1e-12
    # (the methods and a plain clamp: the same values as np.max and np.clip, fewer calls)
    return min(max(float((r[MIN_LAG : MAX_LAG + 1] / norm).max()), 0.0), 1.0)
