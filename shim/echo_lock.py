"""Where the assistant's echo sits in the microphone and how loud: the echo
suppressor's lock (``shim/echo.py``).

A long window (``window``) finds the delay anywhere in 0..``max_delay`` without being
fooled by a pitch period; a short one (``coupling_n``) follows a jump in playback
timing within +-``jitter`` and measures the coupling (echo energy per far energy,
reverberation included) and the leak (what subtraction leaves of the echo) before
double talk creeps in. An estimate is only taken when it explains at least
``lock_ratio`` of the microphone's energy (the echo nearly alone), so the user's
voice never retunes it.

A new delay is **on trial** until confirmed. With no echo at all, a search over
thousands of lags sometimes finds one where the answer "explains" most of a window
whose energy sits in a few tens of milliseconds (the user's first syllable after
silence, the decaying end of a word) or where the answer is nearly silent itself.
Kept there, the residual suppressor takes the user's words for echo and a barge-in is
never heard (``tests/test_echo_lock.py``). A real echo, though, must be suppressed
from its first syllables, so a new delay is used at once, and kept only once the
microphone that came *after* its search (``confirm`` samples at least, audio that
search never saw) is explained at it, within +-``confirm_tol``, by ``lock_ratio``
too: a real echo keeps explaining new audio at its delay, a coincidence does not, and
the lock goes back to what it was before (unlocked, or the previous delay, with its
coupling and leak). New audio that stays digital silence for a whole window leaves
the trial open that long. An estimate whose gain says the echo is more than
``max_gain`` times louder than what was played is no estimate at all: a client's
loudspeaker and microphone do not amplify the answer that much.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shim.echo_far import FarReference
from shim.echo_fit import best_lag
from shim.echo_mic import RecentMic

Float64Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class _Lock:
    delay: int | None
    gain: float
    coupling: float
    leak: float
    couplings: list[float]
    leaks: list[float]


class EchoLock:
    def __init__(
        self,
        far: FarReference,
        *,
        rate_hz: int,
        max_delay: int,
        window: int,
        jitter: int,
        coupling_n: int,
        lock_ratio: float,
        min_leak: float,
        max_gain: float,
        confirm: int,
    ) -> None:
        self.far = far
        self.rate_hz, self.max_delay, self.window, self.jitter = rate_hz, max_delay, window, jitter
        self.coupling_n = coupling_n
        self.lock_ratio, self.min_leak, self.max_gain = lock_ratio, min_leak, max_gain
        self.confirm = confirm  # new mic samples a candidate lag must explain
        self.confirm_tol = rate_hz // 500  # ... within 2 ms of it (the search window moved on)
        self.delay: int | None = None  # echo delay in samples, once locked (maybe on trial)
        self.gain = 0.0  # least-squares gain of the direct path, for subtraction
        self.coupling = 0.0  # mic/far energy ratio when echo alone: direct path + reverb
        self._couplings: deque[float] = deque(maxlen=9)  # recent clean measurements
        self.leak = 1.0  # share of echo energy left after subtraction
        self._leaks: deque[float] = deque(maxlen=9)
        # A delay on trial: the mic end of the search that found it, and the lock before.
        self._trial: tuple[int, _Lock] | None = None
        self._next_search = 0  # mic sample after which the full-range search runs again
        self._next_track = 0  # ... and the search around the current delay
        self._search_gap = rate_hz // 50  # unlocked: back-off between full searches
        self._far_since = 0  # mic sample where the current playback began

    def playing(self, start: int) -> None:
        """Far audio came into range at mic sample ``start``."""
        self._far_since = start

    def silent(self) -> None:
        """No far audio in range: the next playback searches at once."""
        self._search_gap = self.rate_hz // 50
        self._next_search = 0

    def update(self, mic: RecentMic, end: int) -> None:
        """Lock (or follow) the delay and gain on the mic up to ``end``; measure
        coupling and leak."""
        if end >= self._next_search and mic.full:  # (echo_mic.py: a whole window)
            self._search(mic.samples.astype(np.float64), end)
        if self.delay is None:
            return
        short = mic.samples[-self.coupling_n :].astype(np.float64)
        far = self.far.samples(end - short.size - self.delay, end - self.delay).astype(np.float64)
        e_m, e_f, c = (
            float(np.dot(short, short)),
            float(np.dot(far, far)),
            float(np.dot(short, far)),
        )
        if e_f <= e_m * 1e-4 or c * c <= self.lock_ratio * e_m * e_f or end >= self._next_track:
            # The lock no longer explains the mic (`<=`: nor a silent one, e_m == 0) or it
            # is time to refine it, for clock drift: search +-jitter around it.
            self._next_track = end + self.rate_hz // 10
            lo = max(0, self.delay - self.jitter)
            fit = self._fit(short, end, lo, min(self.max_delay, self.delay + self.jitter))
            if fit is None:
                return  # double talk, silence, or a jump not yet explained: hold
            if fit[0] != self.delay:
                self.delay = fit[0]
                far = self.far.samples(end - short.size - self.delay, end - self.delay).astype(
                    np.float64
                )
                e_f, c = float(np.dot(far, far)), float(np.dot(short, far))
        self.gain = c / e_f
        # The median of recent measurements: the few taken just as the user starts
        # talking must not inflate the coupling and mute the rest of the turn.
        self._couplings.append(e_m / e_f)
        self.coupling = statistics.median(self._couplings)
        # What subtraction leaves of the echo: ~0 for a clean delayed copy, more with
        # reverberation, which a single gain and delay cannot model.
        res = short - self.gain * far
        self._leaks.append(max(self.min_leak, float(np.dot(res, res)) / e_m))
        self.leak = statistics.median(self._leaks)

    def _search(self, m: Float64Array, end: int) -> None:
        """The full-range search, or the confirmation of a delay it found before."""
        if self._trial is not None:
            self._confirm(m, end)
        elif (fit := self._fit(m, end)) is not None:
            if self.delay is None or abs(fit[0] - self.delay) > self.jitter:
                # A new delay, used at once (a real echo must be suppressed from its
                # first syllables) but on trial until audio still to come confirms it.
                self._trial = (end, self._state())
            self.delay, self.gain = fit[0], fit[2]
            self._search_gap = self.rate_hz // 50
        elif self.delay is None and end - self._far_since > self.max_delay + self.window:
            # Far audio has played long enough for its echo to arrive, and none
            # did (a client with echo cancellation): search less and less often
            # while this playback lasts, as each search is costly.
            self._search_gap = min(2 * self._search_gap, self.rate_hz // 5)
        if self._trial is not None:
            wait = self.rate_hz // 50
        else:
            wait = self._search_gap if self.delay is None else self.rate_hz // 2
        self._next_search = end + wait

    def _confirm(self, m: Float64Array, end: int) -> None:
        """Keep the delay on trial once the mic after its search is explained there;
        go back to what was before if that mic is not."""
        assert self._trial is not None and self.delay is not None
        since, before = self._trial
        new = min(end - since, m.size)
        if new < self.confirm:
            return
        tol = self.confirm_tol
        if self._fit(m[-new:], end, max(0, self.delay - tol), self.delay + tol) is not None:
            self._trial = None
        elif new >= m.size or bool(np.any(m[-new:])):
            self._restore(before)  # not explained (or never heard): a coincidence
            self._trial = None

    def _state(self) -> _Lock:
        couplings, leaks = list(self._couplings), list(self._leaks)
        return _Lock(self.delay, self.gain, self.coupling, self.leak, couplings, leaks)

    def _restore(self, s: _Lock) -> None:
        self.delay, self.gain, self.coupling, self.leak = s.delay, s.gain, s.coupling, s.leak
        self._couplings.clear()
        self._couplings.extend(s.couplings)
        self._leaks.clear()
        self._leaks.extend(s.leaks)

    def _fit(
        self, m: Float64Array, end: int, lo: int = 0, hi: int | None = None
    ) -> tuple[int, float, float] | None:
        """Best lag in [lo, hi] for mic ``m`` ending at ``end`` (``shim/echo_fit.py``), if
        it explains ``lock_ratio`` of the mic with a gain a loudspeaker could have."""
        hi = self.max_delay if hi is None else min(hi, self.max_delay)
        fit = best_lag(m, self.far.samples(end - m.size - hi, end - lo).astype(np.float64), lo, hi)
        if fit is None or fit[1] < self.lock_ratio or abs(fit[2]) > self.max_gain:
            return None
        return fit
