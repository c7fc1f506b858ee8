"""One sound held on: how a backchannel that is still sounding at the decision ends.

A backchannel said slowly ("I seee", "mm-hmmm", "okaaay") ends on one drawn-out
sound: a vowel or a hum at the same pitch, with the same spectrum, window after
window. Words do not: their vowels and consonants change the spectrum every 100-200
ms, even where the pitch stays flat (a monotone "How long will the delivery ...").
On the tuning sets (the dev corpus and stimuli seeds 11, 13, 31, 47, 61, every
sentence at four phases) no sentence had more than 7 such windows in a row at its
barge-in decision; the slow "I see" that was taken for a barge-in had 10-11
(``docs/benchmarks.md``, "A backchannel still sounding at the decision").
"""

from __future__ import annotations

import math

from shim.overlap_evidence import WindowEvidence

# A window of the same sound: this voiced (most voiced windows of speech are 0.9-1.0),
# within this many semitones of the sound's first window's pitch (an octave apart
# counts as the same: the pitch measure jumps by octaves), and its spectral centroid
# within this fraction of the first window's.
VOICING = 0.9
SEMITONES = 1.5
CENTROID = 0.25
# User-like windows in a row after a sound held on that are words, not its fading tail
# (as many as begin an overlap).
AFTER = 2


def _semitones(a: float, b: float) -> float:
    """How far apart two pitches are, in semitones, octaves folded away."""
    d = 12.0 * math.log2(a / b)
    return abs((d + 6.0) % 12.0 - 6.0)


class Steady:
    """One steady voiced sound in the user-like windows of an overlap: how many windows
    in a row it has lasted, and whether one held on for ``n`` windows or more has ended
    with fewer than ``AFTER`` user-like windows in a row since (its fading tail, not words
    yet)."""

    __slots__ = ("_centroid", "_pitch", "after", "held", "windows")

    def __init__(self) -> None:
        self.windows = self.after = 0
        self.held = False
        self._pitch = self._centroid = 0.0

    def add(self, ev: WindowEvidence | None, n: int) -> None:
        """The next window of the overlap: ``ev`` if user-like, else None; ``n``: the
        windows that make a sound held on."""
        if ev is None:
            self._end(n)
            self.after = 0
            return
        voiced = ev.voicing >= VOICING
        if voiced and self.windows and self._same(ev):
            self.windows += 1
        else:
            self._end(n)
            if voiced:
                self.windows, self._pitch, self._centroid = 1, ev.pitch_hz, ev.centroid_hz
        if self.held:
            self.after += 1
            self.held = self.after < AFTER

    def drawn_out(self, n: int) -> bool:
        """A sound held on for ``n`` windows or more sounds now, or has just ended."""
        return n > 0 and (self.windows >= n or self.held)

    def _same(self, ev: WindowEvidence) -> bool:
        return (
            _semitones(ev.pitch_hz, self._pitch) <= SEMITONES
            and abs(ev.centroid_hz - self._centroid) <= CENTROID * self._centroid
        )

    def _end(self, n: int) -> None:
        """The current sound has ended."""
        if n > 0 and self.windows >= n:
            self.held, self.after = True, 0
        self.windows = 0
