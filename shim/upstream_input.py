"""The input format a duplex upstream reads, and a client's PCM16 appends in it.

Most vLLM-Omni duplex models read whatever format the session declares (the envelope
converts PCM16 to the model's float). PersonaPlex reads only ``pcm_f32le`` at 24 kHz
and refuses the envelope's conversion (``docs/fidelity.md``, row 11), so a route for it
declares that format in its ``session_defaults``; the upstream session opens with it,
says so in its ``session.created``, and the proxy converts the client's audio to it.
A float input format so declared is pinned: the client's own format (a GA client's
PCM16) stays the client's, and never reaches the upstream's session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.audio import (
    PCM_F32,
    AudioFormat,
    StreamResampler,
    b64decode,
    b64encode,
    decode_samples,
    encode_samples,
)

FLOAT_NAMES = frozenset({"pcm_f32le", "audio/pcm_f32le", "f32le"})
# The rate vLLM-Omni assumes when a session declares none (docs/fidelity.md, row 12).
DEFAULT_RATE_HZ = 16000


def _rate(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value > 0 else None


def declared_float_input(session: Mapping[str, Any] | None) -> AudioFormat | None:
    """The ``pcm_f32le`` input a session object declares (its top-level
    ``input_audio_format`` / ``sample_rate_hz`` or ``audio.input``), else None."""
    if not isinstance(session, Mapping):
        return None
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, Mapping) else None
    audio_in = audio_in if isinstance(audio_in, Mapping) else {}
    fmt = session.get("input_audio_format") or audio_in.get("format")
    rate = _rate(session.get("sample_rate_hz")) or _rate(audio_in.get("sample_rate_hz"))
    if isinstance(fmt, Mapping):
        rate = rate or _rate(fmt.get("rate"))
        fmt = fmt.get("type")
    if not (isinstance(fmt, str) and fmt.lower() in FLOAT_NAMES):
        return None
    return AudioFormat(PCM_F32, rate or DEFAULT_RATE_HZ)


def state_input(session: dict[str, Any], fmt: AudioFormat) -> None:
    """Write ``fmt`` into an upstream session object as vLLM-Omni reads it."""
    session["input_audio_format"] = "pcm_f32le" if fmt.encoding == PCM_F32 else "audio/pcm"
    session["sample_rate_hz"] = fmt.rate_hz


class AppendConverter:
    """A client's ``input_audio_buffer.append`` events in the upstream's format,
    resampled as one stream (soxr keeps its filter state between appends)."""

    __slots__ = ("_resampler", "target")

    def __init__(self, target: AudioFormat) -> None:
        self.target = target
        self._resampler: StreamResampler | None = None

    def convert(self, event: Mapping[str, Any], source: AudioFormat) -> dict[str, Any] | None:
        """The append in the target format; None when it holds no whole sample yet
        (the resampler keeps it for the next one). Audio the session already
        accepted from the client is decodable here."""
        audio = event.get("audio")
        if not isinstance(audio, str) or source == self.target:
            return dict(event)
        samples = decode_samples(b64decode(audio), source)
        if self._resampler is None or self._resampler.in_rate != source.rate_hz:
            self._resampler = StreamResampler(source.rate_hz, self.target.rate_hz)
        out = self._resampler.process(samples)
        if not out.size:
            return None
        return {**event, "audio": b64encode(encode_samples(out, self.target))}
