"""The assistant's audio from the upstream to the client, the same in both dialects.

decode (PCM16 at the upstream's rate) -> resample to the client's output format
-> the same audio at 16 kHz as the echo suppressor's far end -> one
``SendClientAudio`` for the output path (``shim/output.py``) to send or hold.
The resamplers keep their state across deltas, so one response is one stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
from shim.settings import VAD_RATE

# Builds the client's event for a delta: the client's base64 audio, or None where the
# upstream's own delta is already in the client's format and passes unchanged.
EventFor = Callable[[str | None], dict[str, Any]]


class AssistantAudio:
    def __init__(self) -> None:
        self._to_client: StreamResampler | None = None
        self._to_far: StreamResampler | None = None

    def reset(self) -> None:
        """A new response: a new stream."""
        self._to_client = self._to_far = None

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
            self._to_client = to_client = StreamResampler(rate, out.rate_hz)
            self._to_far = StreamResampler(rate, VAD_RATE, quality="QQ")
        assert self._to_far is not None
        client = to_client.process(samples)
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
        rest = self._to_client.flush()
        if rest.size == 0:
            return None
        return SendClientAudio(
            event_for(b64encode(encode_samples(rest, out))), int(rest.size), out.rate_hz, None
        )
