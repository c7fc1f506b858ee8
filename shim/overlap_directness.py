"""How sharply a sound falls after its loud parts: a close voice, or a room's.

A voice close to the microphone stops dead at the end of a syllable: its level
drops 20-30 dB within 30 ms (down to the noise floor). The same words from a
television across the room, or a room of distant voices, reach the microphone
mostly as reverberation, whose tail fills the gaps: their level falls a few dB
per 10 ms at most (60 dB over the room's RT60, 0.4-1 s). So the steep falls in
the last half second tell a quiet barge-in by the user, at the microphone, from
loud words of a television, which level alone cannot (``shim/overlap_decision.py``).

Measured on 10 ms blocks: for each block within ``RANGE_DB`` of the span's
loudest, how far the level falls within the next ``FALL_BLOCKS`` blocks (levels
floored ``RANGE_DB`` below the loudest, so silence does not count as a deeper
fall than a noise floor). A fall counts only as far as both the echo-suppressed
audio and the microphone fall: the suppressor cuts bands by up to 40 dB per
frame while the assistant's syllables play, and so chops a continuous
television into falls that are not in the room. The microphone's is taken less the
echo linear subtraction expects there (``EchoSuppressor.expected``, where the
suppressor has locked on the echo): on the raw microphone the answer's echo fills a
quiet close voice's gaps, and its falls reached only down to the echo's level
(``tests/test_close_voice_under_echo.py``). Subtraction is linear, so it makes no falls
of its own, as the suppressor's per-band cuts do. The neighbouring blocks before
one drop all see it, so falls are taken as separate events, each the largest
within ``FALL_BLOCKS`` blocks either side; the measure is the second-largest
event (one stop of a sound, one click or one dropout is not a voice's syllables).
From an overlap's onset, only the falls after it count, against the floor of the
whole half second (a quiet stretch after a loud one does not fall below it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

BLOCK = 160  # 10 ms at 16 kHz
SPAN = 8000  # the last 500 ms: a syllable's end or two
FALL_BLOCKS = 3  # a fall within 30 ms
RANGE_DB = 30.0
FLOOR_DBFS = -70.0  # quieter blocks are silence, whatever the span's loudest


def block_levels(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """The level (dBFS) of each whole ``BLOCK`` of ``x``, counted from its end."""
    n = x.size // BLOCK
    blocks = x[x.size - n * BLOCK :].astype(np.float64).reshape(n, BLOCK)
    level: npt.NDArray[np.float64] = 10.0 * np.log10(np.mean(blocks * blocks, axis=1) + 1e-12)
    return level


def _falls(level: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """For each block: how far the level falls within the next ``FALL_BLOCKS`` blocks
    (the last blocks look at fewer; none past the end)."""
    n = level.size
    if n == 0:
        return level
    peak = float(level.max())
    level = np.maximum(level, max(peak - RANGE_DB, FLOOR_DBFS))
    ahead = np.concatenate((level[1:], np.full(FALL_BLOCKS, np.inf)))
    lowest = np.lib.stride_tricks.sliding_window_view(ahead, FALL_BLOCKS).min(axis=1)[:n]
    falls: npt.NDArray[np.float64] = level - np.minimum(lowest, level)
    return falls


def _both_falls(
    clean: npt.NDArray[np.float64], mic: npt.NDArray[np.float64] | None
) -> npt.NDArray[np.float64]:
    """The falls of the echo-suppressed audio, each no deeper than the microphone's there
    (given the microphone's block levels, as many)."""
    falls = _falls(clean)
    if mic is not None and mic.size == clean.size:
        falls = np.minimum(falls, _falls(mic))
    return falls


def _second_event(falls: npt.NDArray[np.float64], first: int) -> float:
    """The second-largest separate fall of the blocks from ``first`` on."""
    n, first = falls.size, max(0, first)
    if n - first < 2:
        return 0.0
    falls = np.concatenate((np.zeros(first), falls[first:]))
    # Separate events: the deepest first, and none within FALL_BLOCKS of one taken.
    events: list[float] = []
    free = np.ones(n, dtype=bool)
    for i in np.argsort(-falls, kind="stable"):
        if falls[i] <= 0.0 or len(events) == 2:
            break
        if free[i]:
            events.append(float(falls[i]))
            free[max(0, i - FALL_BLOCKS) : i + FALL_BLOCKS + 1] = False
    return events[1] if len(events) == 2 else 0.0


def sharpest_fall_db(
    x: npt.NDArray[np.float32], mic: npt.NDArray[np.float32] | None = None, since: int = 0
) -> float:
    """The second-largest separate fall (dB) within ``FALL_BLOCKS`` blocks after a loud
    block of ``x`` (audio scaled to [-1, 1]), each no deeper than the microphone's
    ``mic`` (the same samples before echo suppression) falls there; 0 for less than two
    blocks. Only the falls of the whole blocks from sample ``since`` on count (an
    overlap's, not a sound's before it began); the floor is still the whole span's, so
    a loud stretch before ``since`` keeps a quiet one after it from counting as falls."""
    same = mic is not None and mic.size == x.size
    falls = _both_falls(block_levels(x), block_levels(mic) if mic is not None and same else None)
    return _second_event(falls, falls.size - max(0, x.size - since) // BLOCK)


class SpanLevels:
    """What ``sharpest_fall_db`` needs of the last ``SPAN`` samples up to ``end`` of the
    echo-suppressed audio and of the microphone, kept per speech window while the
    assistant plays: each signal's block levels (a hundred floats, not the samples),
    and once first read, their falls instead (fifty)."""

    __slots__ = ("_falls", "_levels", "end")

    def __init__(self, clean: npt.NDArray[np.float32], mic: npt.NDArray[np.float32], end: int):
        self._levels: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = (
            block_levels(clean),
            block_levels(mic),
        )
        self._falls: npt.NDArray[np.float64] | None = None
        self.end = end

    def since(self, start: int) -> float:
        """``sharpest_fall_db`` of the span, counting the falls of its whole blocks from
        ``start`` on."""
        falls = self._falls
        if falls is None:
            assert self._levels is not None
            falls = self._falls = _both_falls(*self._levels)  # measured once, when read
            self._levels = None
        skip = min(max(0, start - (self.end - SPAN)), SPAN)
        return _second_event(falls, falls.size - (SPAN - skip) // BLOCK)
