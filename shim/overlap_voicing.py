"""How periodic a window of sound is, at what pitch, and where its spectrum's weight lies.

One voice close to the microphone is strongly periodic at its pitch; several
distant voices, reverberant sound and noise are not (``shim/overlap_evidence.py``).
Pitch and spectral centroid together tell one sound held on (a drawn-out vowel or
"mm": the same pitch and the same spectrum window after window) from words, whose
vowels and consonants change the spectrum every 100-200 ms
(``shim/overlap_steady.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]

RATE = 16000
MIN_LAG, MAX_LAG = 40, 256  # pitch lags at 16 kHz: 400 Hz down to 62.5 Hz
_LAGS = np.arange(MIN_LAG, MAX_LAG + 1)


def voicing(x: Float32Array) -> float:
    """Peak normalised autocorrelation over pitch lags (0 for silence).

    Normalised by the energies of the two overlapping parts, so a steady vowel
    scores near 1 whatever its level.
    """
    return periodicity(x)[0]


def periodicity(x: Float32Array) -> tuple[float, float]:
    """The window's voicing, and the pitch (Hz) it is voiced at: the lag of the peak
    (0, 0 for silence)."""
    x = x - float(x.mean())
    n = x.size
    if n <= MAX_LAG or float(np.dot(x, x)) <= 1e-9:
        return 0.0, 0.0
    size = 1 << (2 * n - 1).bit_length()  # the power of two from 2n up
    spec = np.fft.rfft(x, size)
    r = np.fft.irfft(spec.real**2 + spec.imag**2, size)[: MAX_LAG + 1]
    sq = np.concatenate(([0.0], np.cumsum(x.astype(np.float64) ** 2)))
    head = sq[n - _LAGS]  # energy of x[:n - lag]
    tail = sq[n] - sq[_LAGS]  # energy of x[lag:]
    norm = np.sqrt(head * tail) + 1e-12
    ratios = r[MIN_LAG : MAX_LAG + 1] / norm
    peak = int(ratios.argmax())
    # (a plain clamp: the same values as np.clip, fewer calls)
    return min(max(float(ratios[peak]), 0.0), 1.0), RATE / (MIN_LAG + peak)


def centroid(x: Float32Array) -> float:
    """The centre of mass (Hz) of the window's Hann-windowed magnitude spectrum (0 for
    silence). Without the taper the spectrum leaks by where the window's edges cut the
    pitch periods, and its centroid wanders by 30% within one steady vowel."""
    n = x.size
    w = _HANN.get(n)
    if w is None:
        w = _HANN[n] = np.hanning(n)
    mag = np.abs(np.fft.rfft((x - float(x.mean())) * w))
    total = float(mag.sum())
    return 0.0 if total <= 1e-9 else float(np.dot(mag, np.arange(mag.size))) * RATE / (n * total)


_HANN: dict[int, npt.NDArray[np.float64]] = {}
