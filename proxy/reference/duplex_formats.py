"""Audio formats a duplex session declares and the per-connection append defaults.

Spellings and accepted sets follow ``protocol/realtime/formats.py``; the
defaults (16 kHz PCM16 in, PCM16 out) are ``RealtimeInputDefaults``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import soxr

from shim.audio import b64decode, b64encode
from shim.g711 import ALAW, G711_RATE_HZ, ULAW, int16_to_g711

INPUT_FORMATS = frozenset({"pcm16", "pcm_s16le", "s16le", "pcm_f32le", "g711_ulaw", "g711_alaw"})
OUTPUT_FORMATS = frozenset({"pcm16", "pcm_s16le", "s16le", "wav", "pcm", "g711_ulaw", "g711_alaw"})
G711 = {"g711_ulaw": ULAW, "g711_alaw": ALAW}
_SPELLINGS = {
    "audio/pcm": "pcm16",
    "pcm": "pcm16",
    "audio/pcm16": "pcm16",
    "pcm16": "pcm16",
    "pcm_s16le": "pcm16",
    "s16le": "pcm16",
    "audio/wav": "wav",
    "wav": "wav",
    "audio/pcm_f32le": "pcm_f32le",
    "pcm_f32le": "pcm_f32le",
    "f32le": "pcm_f32le",
    "audio/g711_ulaw": "g711_ulaw",
    "g711_ulaw": "g711_ulaw",
    "g711-ulaw": "g711_ulaw",
    "ulaw": "g711_ulaw",
    "mulaw": "g711_ulaw",
    "audio/g711_alaw": "g711_alaw",
    "g711_alaw": "g711_alaw",
    "g711-alaw": "g711_alaw",
    "alaw": "g711_alaw",
}


def parse_format(raw: object) -> tuple[object, int | None]:
    """``"audio/pcm"`` or ``{type|format, rate|sample_rate_hz|sample_rate}`` -> (format, rate)."""
    if isinstance(raw, str):
        return _SPELLINGS.get(raw.lower(), raw), None
    if not isinstance(raw, dict):
        return raw, None
    rate = raw.get("rate") or raw.get("sample_rate_hz") or raw.get("sample_rate")
    rate_hz = int(rate) if isinstance(rate, int | float) and rate > 0 else None
    fmt = raw.get("type") or raw.get("format")
    if not isinstance(fmt, str):
        return raw, rate_hz
    return _SPELLINGS.get(fmt.lower(), fmt), rate_hz


def audio_part(payload: Mapping[str, object], part: str) -> Mapping[str, object]:
    audio = payload.get("audio")
    section = audio.get(part) if isinstance(audio, dict) else None
    return section if isinstance(section, dict) else {}


def _declared_input_format(payload: Mapping[str, object]) -> object:
    declared = payload.get("input_audio_format")
    return declared if declared is not None else audio_part(payload, "input").get("format")


def _declared_output_format(payload: Mapping[str, object]) -> object:
    declared = payload.get("output_audio_format") or payload.get("response_format")
    return declared if declared is not None else audio_part(payload, "output").get("format")


def format_error(payload: Mapping[str, object]) -> str | None:
    declared_in = _declared_input_format(payload)
    parsed_in, _ = parse_format(declared_in)
    if declared_in is not None and not (
        isinstance(parsed_in, str) and parsed_in.lower() in INPUT_FORMATS
    ):
        return f"Unsupported input_audio_format: {declared_in}"
    declared_out = _declared_output_format(payload)
    parsed_out, _ = parse_format(declared_out)
    if declared_out is not None and not (
        isinstance(parsed_out, str) and parsed_out.lower() in OUTPUT_FORMATS
    ):
        return f"Unsupported output_audio_format: {declared_out}"
    return None


class InputDefaults:
    """Format/rate used for appends that do not say; folded from every session object."""

    __slots__ = ("fmt", "output_fmt", "output_rate_hz", "rate_hz")

    def __init__(
        self,
        fmt: str = "pcm16",
        rate_hz: int = 16000,
        output_fmt: str = "pcm16",
        output_rate_hz: int | None = None,
    ) -> None:
        self.fmt = fmt
        self.rate_hz = rate_hz
        self.output_fmt = output_fmt
        self.output_rate_hz = output_rate_hz

    def fold(self, payload: Mapping[str, object]) -> None:
        parsed, format_rate = parse_format(_declared_input_format(payload))
        if isinstance(parsed, str) and parsed.lower() in INPUT_FORMATS:
            self.fmt = parsed.lower()
        audio_in = audio_part(payload, "input")
        rate = (
            payload.get("sample_rate_hz")
            or payload.get("sample_rate")
            or audio_in.get("sample_rate_hz")
            or audio_in.get("sample_rate")
            or format_rate
        )
        if isinstance(rate, int) and not isinstance(rate, bool) and rate > 0:
            self.rate_hz = rate
        out, out_rate = parse_format(_declared_output_format(payload))
        if isinstance(out, str) and out.lower() in OUTPUT_FORMATS:
            self.output_fmt = (
                "pcm16" if out.lower() in {"pcm", "pcm_s16le", "s16le"} else out.lower()
            )
        # ``audio.output.sample_rate_hz`` counts only where the format comes from
        # ``audio.output`` too (``apply_realtime_session_defaults``).
        top_level = payload.get("output_audio_format") or payload.get("response_format")
        section_rate = audio_part(payload, "output").get("sample_rate_hz") or audio_part(
            payload, "output"
        ).get("sample_rate")
        if out_rate is None and top_level is None and isinstance(section_rate, int | float):
            out_rate = int(section_rate) if section_rate > 0 else None
        if out_rate is not None:
            self.output_rate_hz = out_rate

    def copy(self) -> InputDefaults:
        return InputDefaults(self.fmt, self.rate_hz, self.output_fmt, self.output_rate_hz)


def output_delta(fields: dict[str, object], defaults: InputDefaults) -> dict[str, object]:
    """An audio delta as the session's output format has it: a G.711 session gets
    G.711, at its declared output rate or 8 kHz, as ``convert_output_audio`` in
    ``protocol/realtime/audio.py`` makes it (each delta resampled on its own);
    every other format gets the model's PCM16 as it is."""
    target = defaults.output_fmt
    delta, rate = fields.get("delta"), fields.get("sample_rate_hz")
    if target not in G711 or not isinstance(delta, str) or not isinstance(rate, int):
        return fields
    to_rate = defaults.output_rate_hz or G711_RATE_HZ
    samples = np.frombuffer(b64decode(delta), dtype="<i2")
    if rate != to_rate:
        samples = soxr.resample(samples, rate, to_rate).astype("<i2")
    encoded = int16_to_g711(samples.astype(np.int16), G711[target])
    return {**fields, "delta": b64encode(encoded), "format": target, "sample_rate_hz": to_rate}


def audio_format_object(fmt: str, rate_hz: int | None) -> dict[str, object]:
    if fmt in {"pcm16", "pcm_s16le", "s16le", "pcm"}:
        obj: dict[str, object] = {"type": "audio/pcm"}
    elif fmt in {"pcm_f32le", "g711_ulaw", "g711_alaw"}:
        obj = {"type": f"audio/{fmt}"}
    else:
        obj = {"type": "audio/wav"}
    if rate_hz is not None:
        obj["rate"] = rate_hz
    return obj
