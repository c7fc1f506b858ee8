"""The client's microphone audio to the 16 kHz VAD timeline, about 1 ms behind.

``soxr``'s streaming resampler (``shim/audio.py``) works in blocks: at its medium
quality, 24 kHz to 16 kHz, it hands back ~525 samples every second or third 20 ms
append, so the newest 5-38 ms of what the client sent reaches the VAD one or two
appends late, by an amount that depends on where an utterance falls among its
blocks. Every barge-in decision waits for that (``shim/overlap_decision.py``), so
the microphone's timeline uses libsamplerate's fastest band-limited sinc converter
instead (the ``samplerate`` package): it returns every output whose filter support
has arrived, ~20 samples (1.25 ms) behind the newest at 16 kHz, with the filter's
delay compensated, so sample times on the timeline are ``soxr``'s. A 24 kHz
microphone, the usual one, takes the same filter as a matrix product
(``shim/resample_polyphase.py``), three times cheaper.
"""

from __future__ import annotations

import numpy as np
import samplerate

from shim.audio import Int16Array
from shim.resample_polyphase import IN_RATE, OUT_RATE, TAPS, Polyphase24To16

HELD_MS = 2.5  # the most it holds back, at any input rate from 8 kHz
SCALE = 32768.0
# Silence fed at the end so the filter's last outputs have their support.
FLUSH_PAD = 256


class LowDelayResampler:
    """Chunk-by-chunk int16 resampler with the interface of ``StreamResampler``."""

    __slots__ = ("_converter", "_n_in", "_n_out", "_poly", "_ratio", "in_rate", "out_rate")

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self.in_rate, self.out_rate = in_rate, out_rate
        self._ratio = out_rate / in_rate
        self._converter = samplerate.Resampler("sinc_fastest", channels=1)
        matrix = TAPS is not None and (in_rate, out_rate) == (IN_RATE, OUT_RATE)
        self._poly = Polyphase24To16() if matrix else None
        self._n_in = 0
        self._n_out = 0

    def process(self, samples: Int16Array, last: bool = False) -> Int16Array:
        if self.in_rate == self.out_rate:
            return samples
        if self._poly is not None:
            return self._poly.process(samples, last)
        x = np.asarray(samples, dtype=np.float32).reshape(-1) * np.float32(1 / SCALE)
        self._n_in += x.size
        if last:
            x = np.concatenate((x, np.zeros(FLUSH_PAD, dtype=np.float32)))
        y = self._converter.process(x, self._ratio, end_of_input=last)
        if last:
            # Every output up to the input's end, and none for the padding.
            y = y[: max(0, -(-self._n_in * self.out_rate // self.in_rate) - self._n_out)]
        self._n_out += y.size
        out: Int16Array = np.clip(np.rint(y * SCALE), -32768, 32767).astype(np.int16)
        return out

    def flush(self) -> Int16Array:
        return self.process(np.zeros(0, dtype=np.int16), last=True)
