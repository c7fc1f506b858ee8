"""The audio formats a client may declare, read from and written to its session object.

PCM16 (``audio/pcm``) at any rate 8-192 kHz both ways, ``pcm_f32le`` for input, and
G.711 μ-law / A-law (``audio/pcmu`` / ``audio/pcma``, the beta API's ``g711_ulaw`` /
``g711_alaw``) both ways, 8 kHz for a GA client: the GA format object names no rate for
them. vLLM-Omni reads G.711 at any rate PCM16 may have (the session's, 16 kHz unless
declared: its ``protocol/realtime/audio.py``), so a native client's G.711 may name one
(``g711_rate``).
"""

from __future__ import annotations

import math
from typing import Any

from shim.audio import PCM16, PCM_F32, PCMA, PCMU, AudioFormat
from shim.g711 import G711_RATE_HZ


class SessionConfigError(ValueError):
    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.param = param


_NAMES = {
    **dict.fromkeys(("audio/pcm", "pcm", "pcm16", "pcm_s16le", "s16le"), PCM16),
    **dict.fromkeys(("audio/pcmu", "pcmu", "g711_ulaw"), PCMU),
    **dict.fromkeys(("audio/pcma", "pcma", "g711_alaw"), PCMA),
}
_F32_NAMES = {"audio/pcm_f32le", "pcm_f32le", "f32le"}
_WIRE_NAMES = {
    PCM16: "audio/pcm",
    PCM_F32: "audio/pcm_f32le",
    PCMU: "audio/pcmu",
    PCMA: "audio/pcma",
}
MIN_RATE, MAX_RATE = 8000, 192000
GA_PCM_RATE = 24000  # audio/pcm in the GA API


def wire_format(encoding: str, rate_hz: int, with_rate: bool = False) -> dict[str, Any]:
    """The GA format object: G.711's has no ``rate`` (openai.types.realtime.AudioPCMU),
    unless it is not GA's 8 kHz (a native client's, which only the proxy reads back) or
    ``with_rate`` (a snapshot's: a native session would read a missing one as 16 kHz)."""
    if encoding in (PCMU, PCMA) and rate_hz == G711_RATE_HZ and not with_rate:
        return {"type": _WIRE_NAMES[encoding]}
    return {"type": _WIRE_NAMES.get(encoding, "audio/pcm"), "rate": rate_hz}


def _encoding(name: Any, where: str, allow_f32: bool) -> str:
    if not isinstance(name, str):
        raise SessionConfigError(
            "unsupported_audio_format", f"{where}: format must be a string", where
        )
    lname = name.lower()
    if lname in _F32_NAMES and allow_f32:
        return PCM_F32
    if lname not in _NAMES:
        raise SessionConfigError(
            "unsupported_audio_format",
            f"{where}: unsupported audio format {name!r} (use audio/pcm, audio/pcmu, "
            + ("audio/pcma or pcm_f32le)" if allow_f32 else "or audio/pcma)"),
            where,
        )
    return _NAMES[lname]


def parse_format(
    spec: Any, rate: Any, where: str, allow_f32: bool, g711_rate: int | None = None
) -> AudioFormat:
    """A declared format; ``rate`` is the one to use where ``spec`` names none.

    G.711 is 8 kHz (GA) unless ``g711_rate`` is given: then it is read at any rate
    PCM16 may have, ``g711_rate`` where neither ``spec`` nor ``rate`` names one."""
    encoding, explicit = PCM16, None
    if isinstance(spec, dict):
        name = spec.get("type", spec.get("format", "audio/pcm"))
        explicit = spec.get("rate", spec.get("sample_rate_hz", spec.get("sample_rate")))
        rate = rate if explicit is None else explicit
    else:
        name = spec
    if name is not None:
        encoding = _encoding(name, where, allow_f32)
    if encoding in (PCMU, PCMA) and g711_rate is not None:
        rate = g711_rate if rate is None else rate
    elif encoding in (PCMU, PCMA):
        # G.711 is 8 kHz; a rate carried over from an earlier PCM format does not apply.
        if explicit is not None and explicit != G711_RATE_HZ:
            raise SessionConfigError("invalid_value", f"{where}: G.711 audio is 8000 Hz", where)
        return AudioFormat(encoding, G711_RATE_HZ)
    if rate is None:
        rate = GA_PCM_RATE
    if (
        isinstance(rate, bool)
        or not isinstance(rate, int | float)
        or not math.isfinite(rate)
        or int(rate) != rate
    ):
        raise SessionConfigError("invalid_value", f"{where}: sample rate must be an integer", where)
    if not MIN_RATE <= int(rate) <= MAX_RATE:
        raise SessionConfigError(
            "invalid_value", f"{where}: sample rate must be {MIN_RATE}..{MAX_RATE} Hz", where
        )
    return AudioFormat(encoding, int(rate))
