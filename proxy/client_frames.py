"""One client frame read: a JSON object with a string ``type``, or why it is not one.

Parsed once on arrival (``proxy/client_io.py``); the raw text travels with the event
so that a relay can forward it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from proxy.json_depth import nests_deeper_than


@dataclass(frozen=True, slots=True)
class ClientFrame:
    raw: str
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class BadFrame:
    code: str
    message: str


def parse_client_frame(raw: str, max_depth: int = 64) -> ClientFrame | BadFrame:
    """JSON object with a string ``type``, or a reason it is not one."""
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return BadFrame("invalid_event", f"frame is not valid JSON: {exc}")
    if nests_deeper_than(raw, event, max_depth):
        return BadFrame("invalid_event", f"event nested too deeply (over {max_depth} levels)")
    if not isinstance(event, dict):
        return BadFrame("invalid_event", "an event must be a JSON object")
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return BadFrame("invalid_event", "an event needs a string 'type'")
    return ClientFrame(raw, event)
