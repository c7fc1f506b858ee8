"""The input format a duplex upstream reads, and a client's PCM16 appends in it.

Most vLLM-Omni duplex models read whatever format the session declares (the envelope
converts PCM16 to the model's float). PersonaPlex reads only ``pcm_f32le`` at 24 kHz
and refuses the envelope's conversion (``docs/fidelity.md``, row 11), so a route for it
declares that format in its ``session_defaults``; the upstream session opens with it,
says so in its ``session.created``, and the proxy converts the client's audio to it.
A float input format so declared is pinned: the client's own format (a GA client's
PCM16) stays the client's, and never reaches the upstream's session.

PersonaPlex also hands its model one 80 ms unit (``capabilities.chunk_period_ms``) per
append and keeps the rest of a longer append waiting, so converted audio goes up in
whole units, one per append; the part of a unit not yet complete waits here for the
next append, and goes up ahead of a commit, whose unit the upstream pads out
(``docs/fidelity.md``, row 11a).
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


def unit_samples(fmt: AudioFormat, capabilities: Mapping[str, Any] | None) -> int | None:
    """Samples of ``fmt`` in one model unit of an upstream with these capabilities."""
    chunk_ms = (capabilities or {}).get("chunk_period_ms")
    if isinstance(chunk_ms, bool) or not isinstance(chunk_ms, int) or chunk_ms <= 0:
        return None
    return fmt.rate_hz * chunk_ms // 1000 or None


def state_input(session: dict[str, Any], fmt: AudioFormat) -> None:
    """Write ``fmt`` into an upstream session object as vLLM-Omni reads it."""
    session["input_audio_format"] = "pcm_f32le" if fmt.encoding == PCM_F32 else "audio/pcm"
    session["sample_rate_hz"] = fmt.rate_hz


class AppendConverter:
    """A client's ``input_audio_buffer.append`` events in the upstream's format,
    resampled as one stream (soxr keeps its filter state between appends)."""

    __slots__ = ("_last", "_pending", "_resampler", "target", "unit_bytes")

    def __init__(self, target: AudioFormat, unit_samples: int | None = None) -> None:
        self.target = target
        #: None: appends go up as they come; else in whole units of this many bytes.
        self.unit_bytes = None if unit_samples is None else unit_samples * target.bytes_per_sample
        self._resampler: StreamResampler | None = None
        self._pending = bytearray()
        self._last: dict[str, Any] = {}

    @property
    def pending_bytes(self) -> int:
        return len(self._pending)

    def appends(self, event: Mapping[str, Any], source: AudioFormat) -> list[dict[str, Any]]:
        """The append as the upstream takes it: converted, and cut into whole units
        (none while the unit is incomplete; the rest waits for the next append). A unit
        carries no client ``event_id``: it may hold audio of several appends."""
        audio = event.get("audio")
        if self.unit_bytes is None or not isinstance(audio, str):
            converted = self.convert(event, source)
            return [] if converted is None else [converted]
        self._pending += self._converted(audio, source)
        self._last = {k: v for k, v in event.items() if k not in ("audio", "event_id")}
        out: list[dict[str, Any]] = []
        while len(self._pending) >= self.unit_bytes:
            unit = bytes(self._pending[: self.unit_bytes])
            del self._pending[: self.unit_bytes]
            out.append({**self._last, "audio": b64encode(unit)})
        return out

    def flush(self) -> dict[str, Any] | None:
        """The incomplete unit as one last append, ahead of a commit (which pads it)."""
        if not self._pending:
            return None
        unit, self._pending = bytes(self._pending), bytearray()
        return {**self._last, "type": "input_audio_buffer.append", "audio": b64encode(unit)}

    def drop(self) -> int:
        """The client cleared its buffer: the incomplete unit goes with it (its
        samples, returned)."""
        dropped = len(self._pending) // self.target.bytes_per_sample
        self._pending.clear()
        return dropped

    def convert(self, event: Mapping[str, Any], source: AudioFormat) -> dict[str, Any] | None:
        """The append in the target format; None when it holds no whole sample yet
        (the resampler keeps it for the next one). Audio the session already
        accepted from the client is decodable here."""
        audio = event.get("audio")
        if not isinstance(audio, str) or source == self.target:
            return dict(event)
        data = self._converted(audio, source)
        return {**event, "audio": b64encode(data)} if data else None

    def _converted(self, audio: str, source: AudioFormat) -> bytes:
        """The append's audio in the target format (empty: no whole sample out yet)."""
        data = b64decode(audio)
        if source == self.target:
            return data
        samples = decode_samples(data, source)
        if self._resampler is None or self._resampler.in_rate != source.rate_hz:
            self._resampler = StreamResampler(source.rate_hz, self.target.rate_hz)
        out = self._resampler.process(samples)
        return encode_samples(out, self.target) if out.size else b""
