"""What the proxy knows about speech over the assistant that a client cannot know.

Silero says "speech" for the user, for the assistant's own echo that suppression
left behind, for a television and for a room of distant voices alike. The proxy
has more to go on, all measured here per VAD window (512 samples, 32 ms at
16 kHz) with a few numpy operations:

* ``level_db``: how loud the window is after echo suppression (dBFS);
* ``kept_db``: how much of the microphone's energy echo suppression kept: about
  0 dB when the user speaks, far below when the window was mostly the
  assistant's own voice coming back;
* ``coherence``: the squared normalised correlation between the microphone and
  the audio the proxy sent, at the echo delay (1 for a clean echo, ~0 for the
  user);
* ``voicing``: the highest normalised autocorrelation at a pitch lag (2.5 to
  16 ms): one voice close to the microphone is strongly periodic, several
  distant voices, reverberant sound and noise are not;
* ``decay_db``: how sharply the sound of the last half second falls after its loud
  parts, in the echo-suppressed audio and the microphone (less the echo expected) alike
  (``shim/overlap_directness.py``): a close voice stops dead, a television's or a
  room's reverberation fills the gaps;
* the user's own level, learnt from windows of the user's earlier turns while
  nothing played: distant babble and a television are much quieter than the
  person at the microphone.

The decision that uses them is ``shim/overlap_decision.py``. Time is the
sample index of the window's end (no clock).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from shim.overlap_directness import SPAN, SpanLevels
from shim.overlap_voicing import voicing
from shim.sample_ring import SampleRing

Int16Array = npt.NDArray[np.int16]
Float32Array = npt.NDArray[np.float32]

WINDOW = 512  # Silero's window at 16 kHz
# Audio kept of each signal by default (4.1 s, ``ShimSettings.overlap_keep_ms``): the
# VAD's results for a window may come back well after its audio (a busy batch, a VAD
# thread behind under load), and the window must still be there to be measured.
KEEP = 65536
SILENT_DB = -90.0
LOUD_QUANTILE = 80 / 100  # the loud part of speech: soft consonants and word ends vary
USER_LEVELS_KEPT = 200  # voiced windows of the user's turns its loud level is taken from
# The voice's onset (``OverlapEvidence.voice_onset``): 10 ms blocks, looked for at most
# this far before Silero's first speech window, where a block this far below the
# loudest window is quiet.
ONSET_BLOCK = 160
ONSET_LOOKBACK = 2560
ONSET_DROP_DB = 20.0
ONSET_FLOOR_DB = 6.0


@dataclass(frozen=True, slots=True)
class WindowEvidence:
    end_sample: int
    prob: float  # Silero's speech probability (on the echo-suppressed audio)
    level_db: float
    kept_db: float
    coherence: float
    # The window's echo-suppressed audio: its voicing is measured when first read, as
    # only a loud speech window's class needs it (most windows are silence).
    clean: Float32Array = field(repr=False, compare=False)
    # Its audio was still kept when it was measured (``keep``): a window the VAD judged
    # later than that reads as silence, and tells nothing of the user's level.
    kept: bool = True
    # What ``decay_db`` from a start sample on is measured from, when first read (speech
    # over the assistant that a decision asks about); None where it is not asked for (0 dB).
    _decay: SpanLevels | None = field(default=None, repr=False, compare=False)
    _voicing: float | None = field(default=None, repr=False, compare=False)
    _decays: dict[int, float] = field(default_factory=dict, repr=False, compare=False)

    @property
    def voicing(self) -> float:
        v = self._voicing
        if v is None:
            v = voicing(self.clean)
            object.__setattr__(self, "_voicing", v)  # a cache, not state
        return v

    @property
    def decay_db(self) -> float:
        """How sharply the last ``SPAN`` samples fall (``shim/overlap_directness.py``)."""
        return self.decay_since(0)

    def decay_since(self, start: int) -> float:
        """``decay_db`` of the samples from ``start`` on, within the last ``SPAN``: falls
        before an overlap's onset are not the overlap's."""
        if self._decay is None:
            return 0.0
        # Clamped as the span was taken: up to the audio there was (``measure``).
        start = max(start, self._decay.end - SPAN)
        d = self._decays.get(start)
        if d is None:
            d = self._decays[start] = self._decay.since(start)  # a cache, not state
        return d


def _db(energy: float) -> float:
    return 10.0 * float(np.log10(energy)) if energy > 1e-9 else SILENT_DB


def loud_level(levels: list[float]) -> float:
    """The level (dB) of the loud part of some speech: its 80th percentile.

    Computed as ``np.percentile(levels, 80)`` does (linear, and its two-sided
    interpolation), to the bit, in plain Python: a tenth of the time for the few
    hundred values it gets, once per speech window of the user's.
    """
    v = sorted(levels)
    pos = LOUD_QUANTILE * (len(v) - 1)
    lo = math.floor(pos)
    t = pos - lo
    a, b = v[lo], v[min(lo + 1, len(v) - 1)]
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


class OverlapEvidence:
    """Aligned microphone and echo-suppressed audio, measured window by window.

    ``latency`` is how far the suppressed audio lags the microphone (the
    suppressor's STFT frame): the VAD's sample ``i`` is microphone sample
    ``i - latency``.
    """

    def __init__(self, latency: int = 0, keep: int = KEEP) -> None:
        self.latency = latency
        self.keep = keep  # samples kept of each signal
        self._mic = SampleRing(keep)  # on the VAD's timeline (shifted by latency)
        self._clean = SampleRing(keep)
        self._user: deque[float] = deque(maxlen=USER_LEVELS_KEPT)
        self._user_level: float | None = None  # cached: read per window, changed per turn

    def add(self, mic: Int16Array, clean: Float32Array, start: int) -> None:
        """A chunk of microphone audio at ``start`` and what the VAD gets for it."""
        self.add_scaled(mic.astype(np.float32) / 32768.0, clean, start)

    def add_scaled(self, mic: Float32Array, clean: Float32Array, start: int) -> None:
        """``add`` of the microphone already scaled (``mic.astype(np.float32) / 32768``)."""
        self._mic.add(mic, start + self.latency)
        self._clean.add(np.asarray(clean, dtype=np.float32), start)

    def measure(
        self,
        prob: float,
        end_sample: int,
        far: Float32Array | None = None,
        decay: bool = False,
        echo: Float32Array | None = None,
    ) -> WindowEvidence:
        """The window of the VAD's timeline ending at ``end_sample``.

        ``far`` is the audio the proxy sent, aligned with the window's microphone
        audio (the echo delay applied), when echo suppression has locked on it.
        ``decay`` asks for ``decay_db`` (half a second of audio: only where it is used), of
        the microphone less ``echo``: the echo expected in its last ``SPAN`` samples.
        """
        end = self.mic_window(end_sample)[1] + self.latency  # on the VAD's timeline
        lo = end - WINDOW
        clean32 = self._clean.get(lo, end)
        clean = clean32.astype(np.float64)
        mic = self._mic.get(lo, end).astype(np.float64)
        e_clean, e_mic = float(np.dot(clean, clean)), float(np.dot(mic, mic))
        kept = 0.0 if e_mic <= 1e-9 else _db(max(e_clean, 1e-12) / e_mic)
        coherence = 0.0
        if far is not None and far.size == mic.size:
            f = far.astype(np.float64)
            e_far = float(np.dot(f, f))
            if e_far > 1e-9 and e_mic > 1e-9:
                coherence = float(np.dot(mic, f)) ** 2 / (e_mic * e_far)
        return WindowEvidence(
            end_sample=end_sample,
            prob=prob,
            level_db=_db(e_clean / WINDOW),
            kept_db=min(0.0, kept),
            coherence=coherence,
            clean=clean32,
            kept=lo >= self._clean.end - self.keep,
            _decay=self._span_levels(end, echo) if decay else None,
        )

    def _span_levels(self, end: int, echo: Float32Array | None = None) -> SpanLevels:
        """The block levels of the last ``SPAN`` of both signals up to ``end``, taken now
        (the rings move on; the measure waits for a reader); the microphone's less ``echo``."""
        mic = self._mic.get(end - SPAN, end)
        mic = mic - echo if echo is not None and echo.size == SPAN else mic
        return SpanLevels(self._clean.get(end - SPAN, end), mic, end)

    def voice_onset(self, first_end: int, peak_db: float) -> int:
        """Where the voice of a speech run began, from its energy, ``ONSET_BLOCK`` fine.

        Silero calls a voice speech some 30-140 ms after it starts (it needs context),
        so an overlap timed from its first speech window would be judged late by that
        much. ``first_end`` ends that window and ``peak_db`` is the run's loudest
        window so far. The voice began after the last quiet block before the window:
        ``ONSET_DROP_DB`` below the peak, or within ``ONSET_FLOOR_DB`` of the floor of
        what came before it (a hum, an echo's residue), whichever is higher; at most
        ``ONSET_LOOKBACK`` before the window. A voice all through the look-back is not
        dated back at all (where it began is not known).
        """
        start = first_end - WINDOW
        n = ONSET_LOOKBACK // ONSET_BLOCK
        x = self._clean.get(start - n * ONSET_BLOCK, start).astype(np.float64)
        blocks = x.reshape(n, ONSET_BLOCK)
        level = 10.0 * np.log10(np.mean(blocks * blocks, axis=1) + 1e-12)
        floor = float(np.percentile(level, 10)) + ONSET_FLOOR_DB
        quiet = np.flatnonzero(level < max(peak_db - ONSET_DROP_DB, floor))
        if not quiet.size:
            return start
        return start - (n - 1 - int(quiet[-1])) * ONSET_BLOCK

    def mic_window(self, end_sample: int) -> tuple[int, int]:
        """Microphone samples [start, end) under the VAD's window ending at ``end_sample``.
        The VAD's windows come from the audio given here, so they never run ahead of it;
        a caller whose window clock does is measured on the newest audio instead."""
        end = min(end_sample, self._clean.end) if self._clean.end >= WINDOW else end_sample
        return end - WINDOW - self.latency, end - self.latency

    def learn_user(self, ev: WindowEvidence) -> None:
        """A voiced window of the user's own turn, with nothing playing."""
        self._user.append(ev.level_db)
        self._user_level = None

    @property
    def user_level_db(self) -> float | None:
        """How loud the user's speech is: the 80th percentile of the levels of the voiced
        windows of the user's turns (the loud part: soft consonants and word ends vary
        too much), if enough were heard."""
        if len(self._user) < 8:
            return None
        if self._user_level is None:
            self._user_level = loud_level(list(self._user))
        return self._user_level

    def restart(self) -> None:
        """The input timeline restarts (the VAD's stream was reset); the user's level stays."""
        self._mic = SampleRing(self.keep)
        self._clean = SampleRing(self.keep)
