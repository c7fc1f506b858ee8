"""Event helpers of the barge-in relay: which response an event names, and a client's
settings as the upstream gets them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def response_id(ev: Mapping[str, Any]) -> Any:
    """The response an upstream event belongs to, if it names one."""
    rid = ev.get("response_id")
    if rid is None and isinstance(ev.get("response"), dict):
        rid = ev["response"].get("id")
    return rid


def upstream_settings(ev: Mapping[str, Any]) -> dict[str, Any]:
    """A client's ``session.update`` as the upstream gets it: without turn detection,
    which is the proxy's job in this mode (the upstream would refuse server_vad
    without barge-in, as its overlap policy must agree)."""
    upstream = copy.deepcopy(dict(ev))
    nested = upstream.get("session")
    session: dict[str, Any] = nested if isinstance(nested, dict) else upstream
    session.pop("turn_detection", None)
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, dict) else None
    if isinstance(audio_in, dict):
        audio_in.pop("turn_detection", None)
    return upstream
