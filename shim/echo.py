"""Echo suppression for the VAD: keep the assistant's own voice from barging in.

A client without echo cancellation plays the assistant's audio and its microphone
picks it up again, quieter and later. Silero cannot tell that voice from the
user's, so without help the assistant would interrupt itself. The proxy has one
advantage a generic canceller lacks: it knows exactly what audio it sent (the
"far" signal), and roughly where on the microphone timeline it will be played.

Three stages, all on 16 kHz audio in the mic's sample time:

1. Delay and gain (``shim/echo_lock.py``). Normalised cross-correlation (by FFT) of
   the recent mic with the far audio over lags 0..``max_delay_ms`` finds where the
   echo sits, and the least-squares gain there how loud it is. An estimate is only
   taken when it explains at least ``lock_ratio`` of the mic energy (echo nearly
   alone) with a gain of at most ``max_gain``, so the user's voice never retunes it;
   a new delay is used at once but kept only once the next ``confirm_ms`` of mic,
   which its search never saw, are explained there too; a short window follows
   playback-timing jumps within +-``jitter_ms`` and measures the coupling (echo
   energy per far energy, reverberation included) and the leak (what subtraction
   leaves of the echo).
2. Linear subtraction of ``gain * far[t - delay]``: removes a clean echo and
   leaves the user's speech untouched.
3. Residual suppression per frequency bin, on 16 ms STFT frames (what an AEC
   calls its non-linear processor): each bin is compared with the most echo it
   could hold -- the loudest far spectrum within +-jitter of the delay, or the
   mean over a reverberation tail, times the coupling, times the leak where
   subtraction worked -- and attenuated towards ``floor_db`` when it is not
   clearly louder (``over``). Bins where the user is louder than any echo pass.

With no far audio in range, or no confident delay yet, audio passes unchanged:
when in doubt, let barge-in work. The output lags the input by ``latency`` (one
STFT frame, 16 ms) and is meant for the VAD: per-bin gating would hurt speech
recognition, so the upstream should keep getting the original mic. Pure numpy:
no clock, no I/O. Memory is bounded: far audio is kept for ``history_ms`` beyond
the delay search and ``past_ms`` before it, plus what was sent ahead of playback,
up to ``max_ahead_s`` (the far reference: ``shim/echo_far.py``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from shim.echo_far import FRAME, HOP, MAX_FRAMES, WIN, FarReference
from shim.echo_lock import EchoLock
from shim.echo_mic import RecentMic
from shim.echo_ola import overlap_add, pass_through

Int16Array = npt.NDArray[np.int16]
Float32Array = npt.NDArray[np.float32]
Float64Array = npt.NDArray[np.float64]


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
        max_gain: float = 2.0,  # an echo louder than this times what was played: no lock
        confirm_ms: int = 40,  # new mic a new delay must explain to be kept (used at once)
        coupling_ms: int = 64,
        min_leak_db: float = -20.0,
        over: float = 2.0,
        floor_db: float = -40.0,
        max_ahead_s: float = 120.0,
        past_ms: int = 600,  # kept before the search, for ``expected`` behind the VAD
    ) -> None:
        self.rate_hz = rate_hz
        self.max_delay = rate_hz * max_delay_ms // 1000
        self.window = rate_hz * window_ms // 1000  # mic span one delay estimate looks at
        self.jitter = rate_hz * jitter_ms // 1000
        self.tail = rate_hz * tail_ms // 1000  # room reverberation after the direct path
        self.coupling_n = rate_hz * coupling_ms // 1000  # short: reacts before double talk
        self.min_leak = float(10.0 ** (min_leak_db / 10.0))
        self.over = over  # over-suppression: how far the echo estimate is trusted
        self.floor = float(10.0 ** (floor_db / 20.0))
        self.far = FarReference(
            self.max_delay,
            self.window,
            self.jitter,
            self.tail,
            rate_hz * history_ms // 1000,
            int(max_ahead_s * rate_hz),
            rate_hz * past_ms // 1000,
        )
        self._mic = RecentMic(self.window)  # last `window` mic samples
        self._mic_end = 0  # absolute sample after the newest in self._mic
        self.lock = EchoLock(
            self.far,
            rate_hz=rate_hz,
            max_delay=self.max_delay,
            window=self.window,
            jitter=self.jitter,
            coupling_n=self.coupling_n,
            lock_ratio=lock_ratio,
            min_leak=self.min_leak,
            max_gain=max_gain,
            confirm=rate_hz * confirm_ms // 1000,
        )
        self._playing = False  # far audio in range on the previous call
        self.latency = FRAME  # output sample i is mic sample i - latency
        self._out = np.zeros(FRAME - HOP, dtype=np.float32)  # output ready to return
        self._frame_start = 0  # mic sample where the next STFT frame starts
        self._xbuf = np.zeros(0, dtype=np.float32)  # mic from _frame_start on
        # The same after linear subtraction; None while it equals _xbuf (nothing subtracted
        # from _frame_start on: dropped once the frames passed _sub_end).
        self._rbuf: Float32Array | None = None
        self._sub_end = 0  # mic sample after the last one anything was subtracted from
        self._ola = np.zeros(HOP, dtype=np.float32)  # overlap-add tail of the last frame
        self._start_frames(0)

    # -- far reference ------------------------------------------------------

    def add_far(self, samples: Int16Array, at_sample: int) -> None:
        """Record assistant audio that plays from mic sample ``at_sample`` on."""
        self.far.add(samples, at_sample)

    def clear_far(self, from_sample: int) -> None:
        """Playback stopped at ``from_sample`` (barge-in, clear): forget later far audio."""
        self.far.clear(from_sample)

    def far_active(self, start_sample: int, end_sample: int) -> bool:
        """Could mic samples [start, end) hold echo? (far audio within the delay range)"""
        return self.far.active(start_sample, end_sample)

    def echoing(self, start: int, end: int) -> Float32Array | None:
        """The audio sent that echoes in mic samples [start, end), once the delay is known."""
        if self.delay is None or not self.far_active(start, end):
            return None
        return self.far.held(start - self.delay, end - self.delay)

    def expected(self, start: int, end: int) -> Float32Array | None:
        """The echo linear subtraction expects in mic samples [start, end): the audio sent
        at the locked delay, times the locked gain (None before a lock, with no far
        audio in range, or with part of it no longer held, ``FarReference.held``)."""
        far = self.echoing(start, end)
        return None if far is None else far * np.float32(self.gain)

    @property
    def delay(self) -> int | None:
        """The echo's delay in samples once locked (on trial for its first 40 ms or so: a
        delay not confirmed goes back to what was before, ``shim/echo_lock.py``)."""
        return self.lock.delay

    @property
    def gain(self) -> float:
        return self.lock.gain

    @property
    def coupling(self) -> float:
        return self.lock.coupling

    @property
    def leak(self) -> float:
        return self.lock.leak

    @property
    def dropped_far_samples(self) -> int:
        return self.far.dropped_samples

    # -- mic ------------------------------------------------------------------

    def process(self, mic: Int16Array, start_sample: int) -> Float32Array:
        """The mic chunk at ``start_sample`` as float32 with the echo suppressed.

        The output has the input's length and lags it by ``latency`` samples (the
        STFT frame): output sample ``i`` is mic sample ``start_sample + i - latency``.
        """
        return self.process_scaled(mic.astype(np.float32) / 32768.0, start_sample)

    def process_scaled(self, x: Float32Array, start_sample: int) -> Float32Array:
        """``process`` of the mic already scaled (``mic.astype(np.float32) / 32768``):
        the caller converts each chunk once for all that read it."""
        end = start_sample + x.size
        if start_sample != self._mic_end:  # a gap or a restart: history no longer lines up
            self._mic.clear()
            # Samples still waiting for a frame come out as silence, which keeps the
            # output exactly ``latency`` behind the input.
            pending = np.zeros(self._xbuf.size - HOP, np.float32)
            self._out = np.concatenate((self._out, pending))
            self._start_frames(start_sample)
        self._mic_end = end
        self._mic.add(x)
        self.far.advance(end)
        active = x.size > 0 and self.far_active(start_sample, end)
        if active:
            if not self._playing:
                self._playing = True
                self.lock.playing(start_sample)
            self.lock.update(self._mic, end)
        else:
            self._playing = False
            self.lock.silent()
        r = x
        if active and self.delay is not None:
            r = x - self.gain * self.far.samples(start_sample - self.delay, end - self.delay)
            self._sub_end = end
        if r is not x or self._rbuf is not None:
            rbuf = self._xbuf if self._rbuf is None else self._rbuf
            self._rbuf = np.concatenate((rbuf, r))
        self._xbuf = np.concatenate((self._xbuf, x))
        while self._xbuf.size >= FRAME:
            self._frames(active)
        out = self._out[: x.size]
        self._out = self._out[x.size :]
        return out

    def _start_frames(self, at: int) -> None:
        """Start the STFT grid half a frame before ``at`` so ``at`` gets both halves.

        Invariant: len(_out) + len(_xbuf) == FRAME, so every call can return as many
        samples as it was given.
        """
        self._frame_start = at - HOP
        self._xbuf = np.zeros(HOP, dtype=np.float32)
        self._rbuf = None
        self._ola = np.zeros(HOP, dtype=np.float32)

    def _frames(self, suppress: bool) -> None:
        """Run up to MAX_FRAMES complete STFT frames; overlap-add; release HOP each.

        Without suppression a frame passes unchanged, and since the windows
        overlap-add to one it is computed in the time domain, with no FFT at all.
        """
        k = min(MAX_FRAMES, (self._xbuf.size - FRAME) // HOP + 1)
        if suppress and self.delay is not None:
            out, self._ola = overlap_add(self._suppressed(k, self.delay), self._ola)
        else:
            out, self._ola = pass_through(self._xbuf, k, self._ola)
        self._out = np.concatenate((self._out, out))
        self._xbuf = self._xbuf[k * HOP :]
        self._frame_start += k * HOP
        if self._rbuf is not None:
            # Past the last subtracted sample the copy equals the microphone: drop it.
            self._rbuf = self._rbuf[k * HOP :] if self._frame_start < self._sub_end else None

    def _suppressed(self, k: int, delay: int) -> Float64Array:
        """The next ``k`` frames, residual echo attenuated per bin (windowed again)."""
        idx = np.arange(k)[:, None] * HOP + np.arange(FRAME)
        xs = np.fft.rfft(self._xbuf[idx] * WIN, axis=1)
        rbuf = self._xbuf if self._rbuf is None else self._rbuf
        rs = np.fft.rfft(rbuf[idx] * WIN, axis=1)
        px, pr = xs.real**2 + xs.imag**2, rs.real**2 + rs.imag**2
        spec = np.where(pr <= px, rs, xs)  # subtraction only where it removed energy
        starts = self._frame_start + HOP * np.arange(k) - delay
        p_echo = self.coupling * self.far.power(starts)
        # Where subtraction worked only its leak remains; where it did not (the
        # delay just jumped, say), the whole echo may still be there.
        p_echo = np.where(pr < 0.5 * px, self.leak * p_echo, p_echo)
        gain = 1.0 - self.over * p_echo / (np.minimum(px, pr) + 1e-12)
        y: Float64Array = np.fft.irfft(spec * np.clip(gain, self.floor, 1.0), FRAME, axis=1) * WIN
        return y
