"""Echo suppression for the VAD: keep the assistant's own voice from barging in.

A client without echo cancellation plays the assistant's audio and its microphone
picks it up again, quieter and later. Silero cannot tell that voice from the
user's, so without help the assistant would interrupt itself. The proxy has one
advantage a generic canceller lacks: it knows exactly what audio it sent (the
"far" signal), and roughly where on the microphone timeline it will be played.

Three steps per ``process`` call, all on 16 kHz audio in the mic's sample time:

1. Delay and gain. Normalised cross-correlation (by FFT) between the recent mic
   and the far reference over lags 0..``max_delay_ms`` finds where the echo sits;
   the least-squares gain at that lag says how loud it is. A new estimate is only
   taken when it explains most of the mic energy (echo alone); during double
   talk the last good one is held, so the user's voice never retunes it.
2. Linear subtraction of ``gain * far[t - delay]``: removes most of a clean echo
   while leaving the user's speech untouched.
3. Residual gate (an AEC "non-linear processor"), block by block: if what is left
   is no louder than the echo predicted there (taking the loudest far energy
   within +-``jitter_ms`` of the delay, so playback jitter and a short room tail
   are covered), the block is echo and is attenuated to ``floor_db``; if it is
   louder, someone is talking over the assistant and the block passes.

With no far audio in range, or no confident delay yet, audio passes unchanged:
when in doubt, let barge-in work. The output feeds the VAD; its gating would
hurt speech recognition, so the upstream should keep getting the original mic.
Pure numpy: no clock, no I/O; memory is a fixed ring of far audio plus the far
audio sent ahead of playback (bounded by ``max_ahead_s``).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

Int16Array = npt.NDArray[np.int16]
Float32Array = npt.NDArray[np.float32]
Float64Array = npt.NDArray[np.float64]

_SILENT = 1e-4  # far RMS below this (about -80 dBFS) plays as silence
FRAME = 256  # STFT frame of the residual suppressor: 16 ms at 16 kHz
HOP = FRAME // 2
# sqrt of a periodic Hann: analysis and synthesis windows whose product overlap-adds to 1.
_WIN = np.sqrt(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)).astype(np.float32)


class EchoSuppressor:
    """Removes the assistant's echo from the mic, using the audio the proxy sent."""

    def __init__(
        self,
        *,
        rate_hz: int = 16000,
        max_delay_ms: int = 400,
        history_ms: int = 2000,
        window_ms: int = 192,
        jitter_ms: int = 40,
        tail_ms: int = 80,
        lock_ratio: float = 0.5,
        over: float = 2.0,
        floor_db: float = -40.0,
        max_ahead_s: float = 120.0,
    ) -> None:
        self.rate_hz = rate_hz
        self.max_delay = rate_hz * max_delay_ms // 1000
        self.window = rate_hz * window_ms // 1000  # mic span one delay estimate looks at
        self.jitter = rate_hz * jitter_ms // 1000
        self.tail = rate_hz * tail_ms // 1000  # room reverberation after the direct path
        self.lock_ratio = lock_ratio  # share of mic energy the echo must explain to re-lock
        self.over = over  # over-suppression: how far the echo estimate is trusted
        self.floor = float(10.0 ** (floor_db / 20.0))
        self.max_ahead = int(max_ahead_s * rate_hz)
        # Ring of far audio for absolute samples [self._base, self._base + size).
        self._size = (
            self.max_delay + self.window + self.jitter + self.tail + rate_hz * history_ms // 1000
        )
        self._ring = np.zeros(self._size, dtype=np.float32)
        self._base = 0
        self._ahead: deque[tuple[int, Float32Array]] = deque()  # far beyond the ring's end
        self._ahead_samples = 0
        self._mic = np.zeros(self.window, dtype=np.float32)  # last `window` mic samples
        self._mic_end = 0  # absolute sample after the newest in self._mic
        self.delay: int | None = None  # echo delay in samples, once locked
        self.gain = 0.0  # least-squares gain of the direct path, for subtraction
        self.coupling = 0.0  # mic/far energy ratio when echo alone: direct path + reverb
        self.latency = FRAME
        self._frame_start = 0  # mic sample where the next STFT frame starts
        self._xbuf = np.zeros(0, dtype=np.float32)  # mic from _frame_start on
        self._rbuf = np.zeros(0, dtype=np.float32)  # the same after linear subtraction
        self._ola = np.zeros(FRAME, dtype=np.float32)
        self._out = np.zeros(self.latency, dtype=np.float32)  # output ready to return
        self.dropped_far_samples = 0

    # -- far reference ------------------------------------------------------

    def add_far(self, samples: Int16Array, at_sample: int) -> None:
        """Record assistant audio that plays from mic sample ``at_sample`` on."""
        far = samples.astype(np.float32) / 32768.0
        if self._ahead_samples + far.size > self.max_ahead:
            self.dropped_far_samples += far.size  # bounded memory beats a perfect reference
            return
        self._ahead.append((at_sample, far))
        self._ahead_samples += far.size
        self._place()

    def clear_far(self, from_sample: int) -> None:
        """Playback stopped at ``from_sample`` (barge-in, clear): forget later far audio."""
        self._ahead = deque(
            (at, far[: max(0, from_sample - at)]) for at, far in self._ahead if at < from_sample
        )
        self._ahead_samples = sum(far.size for _, far in self._ahead)
        lo = max(from_sample, self._base)
        if lo < self._base + self._size:
            self._ring[self._idx(lo, self._base + self._size - lo)] = 0.0

    def far_active(self, start_sample: int, end_sample: int) -> bool:
        """Could mic samples [start, end) hold echo? (far audio within the delay range)"""
        lo = start_sample - self.max_delay
        far = self._far(lo, end_sample)
        if far.size and float(np.max(np.abs(far))) > _SILENT:
            return True
        return any(
            at < end_sample and at + far.size > lo and np.max(np.abs(far)) > _SILENT
            for at, far in self._ahead
        )

    def _idx(self, start: int, n: int) -> npt.NDArray[np.intp]:
        return np.arange(start, start + n) % self._size

    def _far(self, start: int, end: int) -> Float32Array:
        """Far samples for absolute [start, end); zeros where nothing was placed."""
        out = np.zeros(max(0, end - start), dtype=np.float32)
        lo, hi = max(start, self._base), min(end, self._base + self._size)
        if hi > lo:
            out[lo - start : hi - start] = self._ring[self._idx(lo, hi - lo)]
        return out

    def _place(self) -> None:
        """Move far audio that now fits into the ring; keep the rest ahead."""
        end = self._base + self._size
        keep: deque[tuple[int, Float32Array]] = deque()
        for at, far in self._ahead:
            lo, hi = max(at, self._base), min(at + far.size, end)
            if hi > lo:
                self._ring[self._idx(lo, hi - lo)] += far[lo - at : hi - at]
            if at + far.size > end:
                start = max(at, end)
                keep.append((start, far[start - at :]))
        self._ahead = keep
        self._ahead_samples = sum(far.size for _, far in keep)

    def _advance(self, mic_end: int) -> None:
        """Slide the ring so it still holds everything a delay search can reach."""
        base = mic_end - self.window - self.max_delay - self.jitter - self.tail
        if base <= self._base:
            return
        n = min(base - self._base, self._size)
        self._ring[self._idx(self._base, n)] = 0.0  # released slots become the future
        self._base = base
        self._place()

    # -- mic ------------------------------------------------------------------

    def process(self, mic: Int16Array, start_sample: int) -> Float32Array:
        """The mic chunk at ``start_sample`` as float32 with the echo suppressed.

        The output has the input's length and lags it by ``latency`` samples (the
        STFT frame): output sample ``i`` is mic sample ``start_sample + i - latency``.
        """
        x = mic.astype(np.float32) / 32768.0
        end = start_sample + x.size
        if start_sample != self._mic_end:  # a gap or a restart: history no longer lines up
            self._mic[:] = 0.0
            self._xbuf = self._xbuf[:0]
            self._rbuf = self._rbuf[:0]
            self._frame_start = start_sample
        self._mic_end = end
        self._mic = np.concatenate((self._mic, x))[-self.window :]
        self._advance(end)
        active = x.size > 0 and self.far_active(start_sample, end)
        if active:
            self._estimate(end)
        r = x
        if active and self.delay is not None:
            r = x - self.gain * self._far(start_sample - self.delay, end - self.delay)
        self._xbuf = np.concatenate((self._xbuf, x))
        self._rbuf = np.concatenate((self._rbuf, r))
        while self._xbuf.size >= FRAME:
            self._frame(active)
        out = self._out[: x.size]
        self._out = self._out[x.size :]
        return out

    def _frame(self, active: bool) -> None:
        """Suppress one STFT frame, overlap-add it, and release ``HOP`` samples."""
        t0 = self._frame_start
        xs = np.fft.rfft(_WIN * self._xbuf[:FRAME])
        rs = np.fft.rfft(_WIN * self._rbuf[:FRAME])
        px, pr = xs.real**2 + xs.imag**2, rs.real**2 + rs.imag**2
        spec = np.where(pr <= px, rs, xs)  # subtraction only where it removed energy
        if active and self.delay is not None:
            p_echo = self.coupling * self._far_power(t0 - self.delay)
            gain = 1.0 - self.over * p_echo / (np.minimum(px, pr) + 1e-12)
            spec = spec * np.clip(gain, self.floor, 1.0)
        self._ola += _WIN * np.fft.irfft(spec, FRAME).astype(np.float32)
        self._out = np.concatenate((self._out, self._ola[:HOP]))
        self._ola = np.concatenate((self._ola[HOP:], np.zeros(HOP, dtype=np.float32)))
        self._xbuf = self._xbuf[HOP:]
        self._rbuf = self._rbuf[HOP:]
        self._frame_start = t0 + HOP

    def _far_power(self, start: int) -> Float64Array:
        """Per-bin echo power bound for a far frame at ``start`` (the delay applied).

        The loudest far spectrum within +-jitter of the delay (a jump in playback
        timing), or, where larger, the mean over the reverberation tail before it.
        """
        lo = start - self.jitter - self.tail
        far = self._far(lo, start + self.jitter + FRAME)
        frames = np.lib.stride_tricks.sliding_window_view(far, FRAME)[:: HOP // 2]
        spec = np.fft.rfft(frames * _WIN, axis=1)
        power = spec.real**2 + spec.imag**2
        n_tail = self.tail // (HOP // 2)
        direct = power[n_tail:].max(axis=0)
        if n_tail == 0:
            return direct
        return np.maximum(direct, power[: n_tail + 1].mean(axis=0))

    def _estimate(self, end: int) -> None:
        """Re-lock delay and gain if the recent mic is clearly a copy of the far audio."""
        m = self._mic.astype(np.float64)
        e_mic = float(np.dot(m, m))
        if e_mic <= 0.0:
            return
        n, lags = m.size, self.max_delay + 1
        f = self._far(end - n - self.max_delay, end).astype(np.float64)  # f[k] = far[end-n-D+k]
        size = 1 << int(np.ceil(np.log2(n + f.size)))
        # c[d] = sum_t m[t] * far[t - d]: correlate m with f, then read lags D..0.
        spec = np.fft.irfft(np.fft.rfft(f, size) * np.conj(np.fft.rfft(m, size)), size)
        corr = spec[:lags][::-1]
        sq = np.concatenate(([0.0], np.cumsum(f * f)))
        e_far = (sq[n : n + lags] - sq[:lags])[::-1]  # energy of far[t - d] over the window
        ok = e_far > e_mic * 1e-4
        if not np.any(ok):
            return
        explained = np.where(ok, corr * corr / np.where(ok, e_far, 1.0), 0.0)
        d = int(np.argmax(explained))
        if explained[d] >= self.lock_ratio * e_mic:
            self.delay = d
            self.gain = float(corr[d] / e_far[d])
            self.coupling = e_mic / float(e_far[d])
