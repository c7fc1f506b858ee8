"""The assistant's audio from the upstream to the client, the same in both dialects.

decode (PCM16 at the upstream's rate) -> resample to the client's output format
-> the same audio at 16 kHz as the echo suppressor's far end -> one
``SendClientAudio`` for the output path (``shim/output.py``) to send or hold.
The resamplers keep their state across deltas, so one response is one stream;
across a move too (``shim/resampler_carry.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from shim.actions import SendClientAudio
from shim.audio import (
    PCM16,
    AudioFormat,
    Int16Array,
    StreamResampler,
    b64decode,
    b64encode,
    decode_samples,
    encode_samples,
)
from shim.resampler_carry import Carry, Position, carry, keep
from shim.settings import VAD_RATE

# Builds the client's event for a delta: the client's base64 audio, or None where the
# upstream's own delta is already in the client's format and passes unchanged.
EventFor = Callable[[str | None], dict[str, Any]]


_NONE: Int16Array = np.zeros(0, dtype=np.int16)


class AssistantAudio:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new response: a new stream."""
        self._to_client: StreamResampler | None = None
        self._to_far: StreamResampler | None = None
        self._tail, self._taken, self._given = _NONE, 0, 0  # see ``Position``
        self._ahead = _NONE  # outputs made before a move, not given yet
        self._drop = 0  # outputs still to come that the client had before a move
        self._mark: Position | None = None

    def position(self) -> Position | None:
        """Where the client resampler stands (None: there is none, or it resamples nothing)."""
        to_client = self._to_client
        if to_client is None or to_client.in_rate == to_client.out_rate:
            return None
        rates = to_client.in_rate, to_client.out_rate
        return Position(*rates, self._tail, self._taken, self._given)

    def mark(self) -> None:
        """Keep the position as of now (a move may go on from here: the hold mark)."""
        self._mark = self.position()

    def carry(self, at_mark: bool) -> dict[str, Any] | None:
        """For the snapshot: the carry from now, or from the mark."""
        pos = self._mark if at_mark else self.position()
        taken = carry(pos) if pos is not None else None
        return taken.to_wire() if taken is not None else None

    def resume(self, raw: Any) -> None:
        """Go on from a snapshot's carry: its tail fed to fresh resamplers, what the
        client had of their output dropped (the echo far end had all of it)."""
        taken = Carry.from_wire(raw)
        self.reset()
        if taken is None:
            return
        rate = taken.in_rate
        self._to_client = StreamResampler(rate, taken.out_rate)
        self._to_far = StreamResampler(rate, VAD_RATE, quality="QQ")
        self._to_far.process(taken.tail)
        self._tail, self._taken, self._given = taken.tail, taken.tail.size, taken.skip
        self._drop = taken.skip
        self._ahead = self._give(self._to_client.process(taken.tail))

    def _give(self, made: Int16Array) -> Int16Array:
        """The client's part of the outputs just made: what it had before a move dropped."""
        if self._drop:
            cut = min(self._drop, made.size)
            made, self._drop = made[cut:], self._drop - cut
        return made

    def _took(self, samples: Int16Array, to_client: StreamResampler) -> None:
        if to_client.in_rate != to_client.out_rate:
            kept = keep(to_client.in_rate, to_client.out_rate)
            self._tail = np.concatenate((self._tail, samples))[-kept:]
            self._taken += samples.size

    def _out(self, made: Int16Array) -> Int16Array:
        client = self._give(made)
        if self._ahead.size:
            client, self._ahead = np.concatenate((self._ahead, client)), _NONE
        self._given += client.size
        return client

    @staticmethod
    def decode(data: str, rate: int) -> Int16Array:
        """The upstream's base64 PCM16; raises AudioError if it is not."""
        return decode_samples(b64decode(data), AudioFormat(PCM16, rate))

    def convert(
        self,
        samples: Int16Array,
        rate: int,
        out: AudioFormat,
        far: bool,
        event_for: EventFor,
        reencode: bool = True,
    ) -> SendClientAudio | None:
        """One upstream delta at ``rate`` as the client's audio; None if the resampler
        has nothing to give yet. ``far``: also make the echo suppressor's copy.
        ``reencode`` False passes the original base64 when no conversion is needed."""
        to_client = self._to_client
        if to_client is None or to_client.in_rate != rate or to_client.out_rate != out.rate_hz:
            # (also when the client switched its output rate mid-response: G.711's 8 kHz)
            self.reset()
            self._to_client = to_client = StreamResampler(rate, out.rate_hz)
            self._to_far = StreamResampler(rate, VAD_RATE, quality="QQ")
        assert self._to_far is not None
        self._took(samples, to_client)
        client = self._out(to_client.process(samples))
        far16 = self._to_far.process(samples) if far else None
        if client.size == 0:
            return None
        same = rate == out.rate_hz and out.encoding == PCM16
        delta = None if same and not reencode else b64encode(encode_samples(client, out))
        return SendClientAudio(event_for(delta), int(client.size), out.rate_hz, far16)

    def flush(self, out: AudioFormat, event_for: EventFor) -> SendClientAudio | None:
        """What the client resampler still holds at the end of a response."""
        if self._to_client is None:
            return None
        rest = self._out(self._to_client.flush())
        if rest.size == 0:
            return None
        return SendClientAudio(
            event_for(b64encode(encode_samples(rest, out))), int(rest.size), out.rate_hz, None
        )
