"""The way the assistant's audio comes back into a client's microphone: a small
loudspeaker (band-pass, overdriven into clipping) in a room (an impulse response).

Two ways to render it, to the same samples: ``render`` is stateless, given the
loudspeaker's input over the last ``history`` samples before the wanted ones as well
(the filters' memory is exact, and flushes and gaps need no bookkeeping), which is
simple but costs two long FFTs per call; ``EchoStream`` is fed the loudspeaker's input
a block at a time, in order, and keeps the filters' memory itself (uniformly
partitioned convolution: one short FFT per block). A client at real-time pace must use
the stream: rendering 20 ms at a time with ``render`` costs about 3 ms of CPU per
block and session here, and six sessions' worth in one process made the benchmark's
client fall seconds behind real time (its echo then came back seconds late, outside any
echo canceller's reach, which no real client's microphone does).
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


class _Partitioned:
    """Streaming linear convolution with ``h``, ``block`` samples in and out per step
    (uniformly partitioned overlap-save: the filter cut into blocks, a delay line of
    the input's spectra)."""

    def __init__(self, h: np.ndarray, block: int) -> None:
        parts = -(-h.size // block)
        padded = np.zeros(parts * block)
        padded[: h.size] = h
        self.block = block
        self.h = np.fft.rfft(padded.reshape(parts, block), 2 * block, axis=1)
        self.x = np.zeros_like(self.h)  # input spectra, newest at self.head
        self.head = 0
        self.prev = np.zeros(block)

    def step(self, x: np.ndarray) -> np.ndarray:
        self.head = (self.head - 1) % self.x.shape[0]
        self.x[self.head] = np.fft.rfft(np.concatenate((self.prev, x)))
        self.prev = x
        # Partition k meets the input spectrum of k blocks ago.
        order = (self.head + np.arange(self.x.shape[0])) % self.x.shape[0]
        y = np.fft.irfft(np.einsum("kf,kf->f", self.x[order], self.h), 2 * self.block)
        return y[self.block :]


class EchoStream:
    """``EchoPath.render`` block by block: the loudspeaker's input in order, ``block``
    samples a call (PCM16-scaled floats), its echo out."""

    def __init__(self, path: EchoPath, block: int) -> None:
        self.path = path
        self.block = block
        self._band = _Partitioned(path.band, block)
        self._room = _Partitioned(path.room, block)

    def next(self, x: np.ndarray) -> np.ndarray:
        if x.size != self.block:
            raise ValueError(f"an echo stream takes blocks of {self.block} samples")
        p = self.path
        y = self._band.step(x.astype(np.float64) / 32768.0) * p.drive
        y = np.clip(y, -1.0, 1.0) if p.hard else np.tanh(y)
        return (self._room.step(y / p.drive) * 32768.0).astype(np.float32)


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
