"""Event helpers of the barge-in relay: which response an event names, and a client's
settings as the upstream gets them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shim.native_formats import NATIVE_NAMES

# GA's G.711 names, which vLLM-Omni does not know.
_GA_G711_NAMES = frozenset({"audio/pcmu", "pcmu", "audio/pcma", "pcma"})
_G711 = ("g711_ulaw", "g711_alaw")
_UPSTREAM_INPUT = frozenset({"pcm16", "pcm_s16le", "s16le", "pcm_f32le", *_G711})
_UPSTREAM_OUTPUT = frozenset({"pcm16", "pcm_s16le", "s16le", "wav", "pcm", *_G711})


def response_id(ev: Mapping[str, Any]) -> Any:
    """The response an upstream event belongs to, if it names one."""
    rid = ev.get("response_id")
    if rid is None and isinstance(ev.get("response"), dict):
        rid = ev["response"].get("id")
    return rid


# The proxy's own turn-detection fields (docs/protocol.md, "Overlap protocol"):
# vLLM-Omni refuses a ``server_vad`` object with fields it does not know.
PROXY_TURN_FIELDS = ("barge_in_decision_ms", "overlap_events")


def upstream_settings(ev: Mapping[str, Any]) -> dict[str, Any]:
    """A client's ``session.update`` as the upstream gets it: whole, turn detection
    included, less the proxy's own fields. The proxy's own VAD reads it too (to
    decide barge-ins), but a vLLM-Omni upstream detects turns only under
    ``server_vad`` and answers nothing without it (docs/fidelity.md, row 2), so a
    native client's choice must reach it."""
    out = copy.deepcopy(dict(ev))
    nested = out.get("session")
    without_proxy_fields(nested if isinstance(nested, dict) else out)
    return out


def without_proxy_fields(session: dict[str, Any]) -> dict[str, Any]:
    """``session`` (changed in place) without the proxy's own turn-detection fields."""
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, dict) else None
    for holder in (session, audio_in):
        td = holder.get("turn_detection") if isinstance(holder, dict) else None
        if isinstance(td, dict):
            for key in PROXY_TURN_FIELDS:
                td.pop(key, None)
    return session


def ga_g711_refusal(ev: Mapping[str, Any]) -> str | None:
    """vLLM-Omni's words refusing an update that names GA's G.711 (its
    ``protocol/realtime/formats.py``, ``validate_realtime_session_audio_formats``:
    the input format first), or None."""
    nested = ev.get("session")
    session: Mapping[str, Any] = nested if isinstance(nested, dict) else ev
    audio = session.get("audio")
    parts = audio if isinstance(audio, dict) else {}
    for side, keys in (
        ("input", ("input_audio_format",)),
        ("output", ("output_audio_format", "response_format")),
    ):
        spec = next((session[k] for k in keys if session.get(k)), None)
        part = parts.get(side)
        if spec is None and isinstance(part, dict):
            spec = part.get("format")
        name = spec.get("type") if isinstance(spec, dict) else spec
        if isinstance(name, str) and name.lower() in _GA_G711_NAMES:
            return f"Unsupported {side}_audio_format: {spec}"
    return None


def upstream_format_refusal(ev: Mapping[str, Any]) -> str | None:
    """vLLM-Omni's words refusing a ``session.update`` for its audio formats (its
    ``validate_realtime_session_audio_formats``: the input format first), or None
    when it takes them. It checks no rates there."""
    nested = ev.get("session")
    session: Mapping[str, Any] = nested if isinstance(nested, dict) else ev
    audio = session.get("audio")
    parts = audio if isinstance(audio, dict) else {}
    for side, spec, known in (
        ("input", session.get("input_audio_format"), _UPSTREAM_INPUT),
        (
            "output",
            session.get("output_audio_format") or session.get("response_format"),
            _UPSTREAM_OUTPUT,
        ),
    ):
        part = parts.get(side)
        if spec is None and isinstance(part, dict):
            spec = part.get("format")
        name = (spec.get("type") or spec.get("format")) if isinstance(spec, dict) else spec
        read = NATIVE_NAMES.get(name.lower(), name.lower()) if isinstance(name, str) else None
        if spec is not None and read not in known:
            return f"Unsupported {side}_audio_format: {spec}"
    return None
