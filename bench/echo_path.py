"""The way the assistant's audio comes back into a client's microphone: a small
loudspeaker (band-pass, overdriven into clipping) in a room (an impulse response).

Stateless: ``render`` is given the loudspeaker's input over the last ``history``
samples before the wanted ones as well, so the filters' memory is exact and the
loudspeaker's flushes and gaps need no bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RATE = 24000
BAND_TAPS = 255


def bandpass(lo_hz: float, hi_hz: float, taps: int = BAND_TAPS) -> np.ndarray:
    """A windowed-sinc band-pass FIR (Hann window)."""
    n = np.arange(taps) - (taps - 1) / 2

    def lowpass(fc: float) -> np.ndarray:
        return 2 * fc / RATE * np.sinc(2 * fc / RATE * n)

    h = (lowpass(hi_hz) - lowpass(lo_hz)) * np.hanning(taps)
    return h.astype(np.float64)


def convolve(x: np.ndarray, h: np.ndarray) -> np.ndarray:
    size = 1 << (x.size + h.size - 1).bit_length()
    y = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(h, size), size)
    return y[: x.size]


@dataclass
class EchoPath:
    band: np.ndarray  # the loudspeaker's band-pass FIR
    drive: float  # gain into the clipper (1: barely clips a full-scale peak)
    hard: bool  # hard clipping, else tanh
    room: np.ndarray  # the room's impulse response (direct sound included)

    @property
    def history(self) -> int:
        return self.band.size + self.room.size

    def render(self, x: np.ndarray, n: int) -> np.ndarray:
        """The last ``n`` samples of the echo of ``x`` (PCM16-scaled floats), whose
        first ``x.size - n`` samples are the ``history`` before them."""
        if not np.any(x):
            return np.zeros(n, dtype=np.float32)
        y = convolve(x / 32768.0, self.band) * self.drive
        y = np.clip(y, -1.0, 1.0) if self.hard else np.tanh(y)
        y = convolve(y / self.drive, self.room)
        return (y[-n:] * 32768.0).astype(np.float32)


def from_manifest(echo: dict[str, object], room: np.ndarray) -> EchoPath:
    lo, hi = echo["band_hz"]  # type: ignore[misc]
    # Unit energy: the echo's level is the case's gain (a room adds no loudness of its own).
    room_ir = room.astype(np.float64)[: int(0.4 * RATE)]
    room_ir /= np.sqrt(np.sum(room_ir**2)) + 1e-12
    return EchoPath(
        band=bandpass(float(lo), float(hi)),
        drive=float(echo["drive"]),  # type: ignore[arg-type]
        hard=echo.get("clipping") == "hard",
        room=room_ir,
    )
