"""Event helpers of the barge-in relay: which response an event names, and a client's
settings as the upstream gets them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

# GA's G.711 names, which vLLM-Omni does not know.
_GA_G711_NAMES = frozenset({"audio/pcmu", "pcmu", "audio/pcma", "pcma"})


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


def ga_g711_names(ev: Mapping[str, Any]) -> list[str]:
    """The G.711 formats a native client's ``session.update`` names by GA's names
    (``audio/pcmu``, ``pcma``): vLLM-Omni knows G.711 only as ``g711_ulaw`` /
    ``g711_alaw`` and refuses the update (``unsupported_audio_format``; its
    ``protocol/realtime/formats.py``), so the relay lets it say so."""
    nested = ev.get("session")
    session: Mapping[str, Any] = nested if isinstance(nested, dict) else ev
    audio = session.get("audio")
    specs = [session.get("input_audio_format"), session.get("output_audio_format")]
    if isinstance(audio, dict):
        for part in ("input", "output"):
            side = audio.get(part)
            if isinstance(side, dict):
                specs.append(side.get("format"))
    names = [spec.get("type") if isinstance(spec, dict) else spec for spec in specs]
    return [n for n in names if isinstance(n, str) and n.lower() in _GA_G711_NAMES]


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
