"""The client resampler's place in a response, carried to another replica.

A stream resampler holds back the last few tens of milliseconds of what it was
given (its filter looks ahead). A move goes on from the last upstream event
handled, so what the old owner's resampler held of it never reaches the client
unless the new owner can make it again. The carry is the end of the upstream's
audio so far (enough to cover what is held and the filter's reach before it),
starting on a sample where the input and output clocks meet, and how many of the
outputs a fresh resampler makes of it the client already has. Fed that tail and
dropping those outputs, a fresh resampler goes on where the old one stood, to
within the rounding of its last bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from shim.audio import AudioError, Int16Array, b64decode, b64encode

# Upstream audio kept for a carry, in seconds: what a resampler holds (up to 80 ms
# where the client's output is G.711's 8 kHz) twice over.
KEEP_S = 0.2


def step(in_rate: int, out_rate: int) -> int:
    """Input samples from one sample where the two clocks meet to the next."""
    return in_rate // math.gcd(in_rate, out_rate)


def keep(in_rate: int, out_rate: int) -> int:
    """Input samples to keep for a carry."""
    return int(in_rate * KEEP_S) + step(in_rate, out_rate)


@dataclass(frozen=True, slots=True)
class Position:
    """A client resampler's place in one response."""

    in_rate: int
    out_rate: int
    tail: Int16Array  # the last inputs, up to ``keep``
    taken: int  # inputs given to it
    given: int  # its outputs the client has


@dataclass(frozen=True, slots=True)
class Carry:
    in_rate: int
    out_rate: int
    tail: Int16Array  # starts on a sample where the clocks meet
    skip: int  # outputs of a fresh resampler fed ``tail`` the client already has

    def to_wire(self) -> dict[str, Any]:
        data = b64encode(self.tail.astype("<i2").tobytes())
        return {"rate": self.in_rate, "out_rate": self.out_rate, "tail": data, "skip": self.skip}

    @staticmethod
    def from_wire(raw: Any) -> Carry | None:
        """None for a missing or malformed carry (the move then starts afresh)."""
        if not isinstance(raw, dict):
            return None
        rate, out_rate, data, skip = (raw.get(k) for k in ("rate", "out_rate", "tail", "skip"))
        ints = (rate, out_rate, skip)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            return None
        if not isinstance(data, str) or rate <= 0 or out_rate <= 0 or skip < 0:  # type: ignore[operator]
            return None
        try:
            raw_bytes = b64decode(data)
        except AudioError:
            return None
        if len(raw_bytes) % 2:
            return None
        tail = np.frombuffer(raw_bytes, dtype="<i2").astype(np.int16)
        return Carry(int(rate), int(out_rate), tail, int(skip))  # type: ignore[arg-type]


def carry(pos: Position) -> Carry | None:
    """What a new owner needs to go on from ``pos``; None when nothing is held."""
    held = pos.taken * pos.out_rate / pos.in_rate - pos.given
    if held < 0.5:
        return None
    n = step(pos.in_rate, pos.out_rate)
    need = math.ceil(2 * held * pos.in_rate / pos.out_rate)
    start = max(0, pos.taken - need)
    start -= start % n  # back to where the clocks last met
    if start < pos.taken - pos.tail.size:  # not kept: on to where they next meet
        start = pos.taken - pos.tail.size
        start += -start % n
    if start >= pos.taken:
        return None
    skip = pos.given - start // n * (pos.out_rate // math.gcd(pos.in_rate, pos.out_rate))
    tail = pos.tail[pos.tail.size - (pos.taken - start) :]
    return Carry(pos.in_rate, pos.out_rate, tail, max(0, skip))
