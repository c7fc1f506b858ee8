"""Where the assistant's echo sits in the microphone, and how loud: the search the
echo suppressor (``shim/echo.py``) runs to lock on, and to follow, its delay.

Normalised cross-correlation by FFT of the recent microphone with the far audio
(what the proxy sent) over a range of lags; the least-squares gain at the best lag.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float64Array = npt.NDArray[np.float64]


def best_lag(m: Float64Array, f: Float64Array, lo: int, hi: int) -> tuple[int, float, float] | None:
    """Best lag in [lo, hi] for mic ``m``: (lag, explained share, gain), or None.

    ``f`` is the far audio from ``hi`` samples before the mic's first sample to
    ``lo`` before its end (``f[k] = far[end - n - hi + k]``). Explained share: how
    much of the mic energy ``gain * far[t - lag]`` accounts for (1 for a clean
    delayed copy).
    """
    e_mic = float(np.dot(m, m))
    if e_mic <= 0.0:
        return None
    n, lags = m.size, hi - lo + 1
    size = 1 << int(np.ceil(np.log2(n + f.size)))
    # r[k] = sum_t m[t] * f[t + k] is the correlation at lag hi - k.
    r = np.fft.irfft(np.fft.rfft(f, size) * np.conj(np.fft.rfft(m, size)), size)
    corr = r[:lags][::-1]  # lags lo..hi
    sq = np.concatenate(([0.0], np.cumsum(f * f)))
    e_far = (sq[n : n + lags] - sq[:lags])[::-1]  # energy of far[t - lag] over the window
    ok = e_far > e_mic * 1e-4
    if not np.any(ok):
        return None
    explained = np.where(ok, corr * corr / np.where(ok, e_far, 1.0), 0.0)
    k = int(np.argmax(explained))
    return lo + k, float(explained[k] / e_mic), float(corr[k] / e_far[k])
