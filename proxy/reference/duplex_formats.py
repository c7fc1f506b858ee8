"""Audio formats a duplex session declares and the per-connection append defaults.

Spellings and accepted sets follow ``protocol/realtime/formats.py``; the
defaults (16 kHz PCM16 in, PCM16 out) are ``RealtimeInputDefaults``.
"""

from __future__ import annotations

from collections.abc import Mapping

INPUT_FORMATS = frozenset({"pcm16", "pcm_s16le", "s16le", "pcm_f32le", "g711_ulaw", "g711_alaw"})
OUTPUT_FORMATS = frozenset({"pcm16", "pcm_s16le", "s16le", "wav", "pcm", "g711_ulaw", "g711_alaw"})
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

    __slots__ = ("fmt", "output_fmt", "rate_hz")

    def __init__(self, fmt: str = "pcm16", rate_hz: int = 16000, output_fmt: str = "pcm16") -> None:
        self.fmt = fmt
        self.rate_hz = rate_hz
        self.output_fmt = output_fmt

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
        out, _ = parse_format(_declared_output_format(payload))
        if isinstance(out, str) and out.lower() in OUTPUT_FORMATS:
            self.output_fmt = (
                "pcm16" if out.lower() in {"pcm", "pcm_s16le", "s16le"} else out.lower()
            )

    def copy(self) -> InputDefaults:
        return InputDefaults(self.fmt, self.rate_hz, self.output_fmt)


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
