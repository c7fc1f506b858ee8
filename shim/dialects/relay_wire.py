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
    """A client's ``session.update`` as the upstream gets it: whole, turn detection
    included. The proxy's own VAD reads it too (to decide barge-ins), but a vLLM-Omni
    upstream detects turns only under ``server_vad`` and answers nothing without it
    (docs/fidelity.md, row 2), so a native client's choice must reach it."""
    return copy.deepcopy(dict(ev))
