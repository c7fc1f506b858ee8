"""vLLM-Omni's spellings of an audio format, read into the proxy's own names.

vLLM-Omni reads a session's format under many names (``audio/g711_ulaw``, ``mulaw``,
``g711-alaw``, ``audio/pcm16``, ...: its ``protocol/realtime/formats.py``,
``parse_realtime_audio_format``), and reads the flat ``input_audio_format`` /
``output_audio_format`` (or ``response_format``) before ``audio.*.format`` (its
``validate_realtime_session_audio_formats``). The proxy applies a native client's
``session.update`` itself before the upstream sees it, so it must read it the same
way, or it refuses what the upstream takes (docs/protocol.md, "Native clients").
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

# vLLM-Omni's name for each spelling it reads (``parse_realtime_audio_format``).
NATIVE_NAMES = {
    **dict.fromkeys(("audio/pcm", "pcm", "audio/pcm16", "pcm16", "pcm_s16le", "s16le"), "pcm16"),
    **dict.fromkeys(("audio/wav", "wav"), "wav"),
    **dict.fromkeys(("audio/pcm_f32le", "pcm_f32le", "f32le"), "pcm_f32le"),
    **dict.fromkeys(("audio/g711_ulaw", "g711_ulaw", "g711-ulaw", "ulaw", "mulaw"), "g711_ulaw"),
    **dict.fromkeys(("audio/g711_alaw", "g711_alaw", "g711-alaw", "alaw"), "g711_alaw"),
}
# vLLM-Omni's names as ``shim/audio_formats.py`` reads them; ``wav`` has none: the
# proxy cannot serve WAV output.
_PROXY_NAMES = {
    "pcm16": "audio/pcm",
    "pcm_f32le": "pcm_f32le",
    "g711_ulaw": "g711_ulaw",
    "g711_alaw": "g711_alaw",
}
PROXY_CANNOT_SERVE = "unsupported_by_proxy"


def native_name(spec: object) -> object:
    """The name vLLM-Omni reads a format string or object as; what it does not
    know comes back as it was."""
    name = (spec.get("type") or spec.get("format")) if isinstance(spec, dict) else spec
    if not isinstance(name, str):
        return name
    return NATIVE_NAMES.get(name.lower(), name)


def proxy_spelled(spec: object) -> object:
    """``spec`` with a name vLLM-Omni knows in the proxy's own spelling (a format
    object keeps its rate); anything else as it was."""
    known = _PROXY_NAMES.get(str(native_name(spec)))
    if known is None:
        return spec
    if isinstance(spec, dict):
        rest = {k: v for k, v in spec.items() if k not in ("type", "format")}
        return {"type": known, **rest}
    return known


def native_input_spec(session: Mapping[str, Any]) -> object:
    """The input format a session object declares, where vLLM-Omni looks first."""
    spec = session.get("input_audio_format")
    if spec is None:
        spec = _part(session, "input").get("format")
    return spec


def native_output_spec(session: Mapping[str, Any]) -> object:
    """The output format a session object declares, where vLLM-Omni looks first."""
    spec = session.get("output_audio_format") or session.get("response_format")
    if spec is None:
        spec = _part(session, "output").get("format")
    return spec


def _part(session: Mapping[str, Any], side: str) -> dict[str, Any]:
    audio = session.get("audio")
    part = audio.get(side) if isinstance(audio, dict) else None
    return part if isinstance(part, dict) else {}


def format_rate(spec: object) -> Any:
    """The rate a format object names, as vLLM-Omni reads it
    (``parse_realtime_audio_format``: a positive number, else none)."""
    if not isinstance(spec, dict):
        return None
    return _applied(spec.get("rate") or spec.get("sample_rate_hz") or spec.get("sample_rate"))


def _applied(rate: object) -> Any:
    """A rate as vLLM-Omni applies it: a positive number, whole (``int()``); none for
    anything else (a string, zero), which it ignores. A bool or a number that is not
    finite is kept, for the proxy to refuse."""
    if isinstance(rate, bool) or (isinstance(rate, float) and not math.isfinite(rate)):
        return rate
    return int(rate) if isinstance(rate, int | float) and rate > 0 else None


def native_input_rate(session: Mapping[str, Any]) -> Any:
    """The input rate a session object sets, where vLLM-Omni looks for it
    (``apply_realtime_session_defaults``): the flat ``sample_rate_hz`` /
    ``sample_rate``, then ``audio.input``'s, then the format's own; None if none."""
    rate = session.get("sample_rate_hz") or session.get("sample_rate")
    if rate is None:
        part = _part(session, "input")
        rate = part.get("sample_rate_hz") or part.get("sample_rate")
    if rate is None:
        return format_rate(native_input_spec(session))
    return _applied(rate)


def native_output_rate(session: Mapping[str, Any]) -> Any:
    """The output rate a session object sets: the format's own, else (only where the
    format is not a flat one) ``audio.output``'s ``sample_rate_hz`` / ``sample_rate``."""
    rate = format_rate(native_output_spec(session))
    if rate is None and not (session.get("output_audio_format") or session.get("response_format")):
        part = _part(session, "output")
        rate = _applied(part.get("sample_rate_hz") or part.get("sample_rate"))
    return rate


_RATE_KEYS = ("sample_rate_hz", "sample_rate")


def as_the_proxy_reads(ev: Mapping[str, Any]) -> dict[str, Any]:
    """A native client's ``session.update`` with the formats and rates vLLM-Omni
    applies put where, and named as, ``shim/session_config.py`` reads them: each
    side's format under ``audio.*.format``, its rate (found where vLLM-Omni looks
    first) as the format's ``rate``, or ``audio.*.sample_rate_hz`` with no format."""
    out = copy.deepcopy(dict(ev))
    nested = out.get("session")
    session: dict[str, Any] = nested if isinstance(nested, dict) else out
    sides = (
        ("input", native_input_spec(session), native_input_rate(session)),
        ("output", native_output_spec(session), native_output_rate(session)),
    )
    for key in ("input_audio_format", "output_audio_format", "response_format", *_RATE_KEYS):
        session.pop(key, None)
    for side, spec, rate in sides:
        audio = session.get("audio")
        if not isinstance(audio, dict):
            audio = session["audio"] = {}
        part = audio.get(side)
        if not isinstance(part, dict):
            part = audio[side] = {}
        for key in _RATE_KEYS:
            part.pop(key, None)
        if spec is None:
            if rate is not None:
                part["sample_rate_hz"] = rate
            continue
        name = proxy_spelled(spec)
        if isinstance(name, dict):
            name = name.get("type") if str(native_name(spec)) in _PROXY_NAMES else spec
        part["format"] = name if isinstance(name, dict) or rate is None else {"type": name}
        if rate is not None and isinstance(part["format"], dict):
            part["format"]["rate"] = rate
    return out


def proxy_refusal(ev: Mapping[str, Any]) -> tuple[str, str] | None:
    """(message, param) refusing a native update vLLM-Omni would take but the proxy
    cannot serve (WAV output), in the proxy's own words, or None."""
    nested = ev.get("session")
    session: Mapping[str, Any] = nested if isinstance(nested, dict) else ev
    spec = native_output_spec(session)
    if native_name(spec) == "wav":
        return (
            f"the proxy cannot send output audio as {spec!r} "
            "(it sends pcm16, g711_ulaw or g711_alaw)",
            "output_audio_format",
        )
    return None
