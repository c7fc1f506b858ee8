"""One client frame read: a JSON object with a string ``type``, or why it is not one.

Parsed once on arrival (``proxy/client_io.py``); the raw text travels with the event
so that a relay can forward it unchanged. orjson parses a 20 ms audio append in about
a microsecond, less than a scan of its text that would be as strict (every character
checked for what JSON forbids), so every frame is parsed, and a relayed frame is as
valid as one the proxy handles itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.client_fields import DEFAULT_CAPS, FieldCaps, refusal
from proxy.clock import now_ms
from proxy.config import ServerConfig
from proxy.json_depth import holds_more_values_than, nests_deeper_than

_DEFAULTS = ServerConfig()  # the limits a caller that names none parses with


# Not frozen: one is made per client frame, and a frozen dataclass's __init__ (a
# setattr call per field) costs about three times a plain one's. Nothing changes one.
@dataclass(slots=True)
class ClientFrame:
    raw: str
    event: dict[str, Any]
    # When it was read off the socket (``proxy/clock.py``): not part of what it says.
    read_ms: float | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class BadFrame:
    code: str
    message: str
    param: str | None = None  # a field over its size (``proxy/client_fields.py``)
    event_id: str | None = None  # the refused event's, when the error may name it

    def native(self) -> tuple[str, str]:
        """The refusal in vLLM-Omni's words, for its own clients (its
        ``entrypoints/duplex/serving.py``: no JSON, or no object with a ``type``)."""
        if self.message.startswith("frame is not valid JSON"):
            return "invalid_json", "Invalid JSON event"
        if self.param is not None or self.message.startswith(("event nested", "event holds")):
            return self.code, self.message  # the proxy's own limits
        return "bad_event", "Duplex event must be a JSON object with a type"


def parse_client_frame(
    raw: str,
    max_depth: int = _DEFAULTS.max_json_depth,
    max_values: int = _DEFAULTS.max_json_values,
    caps: FieldCaps = DEFAULT_CAPS,
) -> ClientFrame | BadFrame:
    """JSON object with a string ``type`` and no field over its ``caps``, or a reason
    it is not one."""
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return BadFrame("invalid_event", f"frame is not valid JSON: {exc}")
    # A text with no '[' and no '{' after its first character holds at most the outer
    # object (an audio append): no container to count, known from two scans of the
    # text (a few times cheaper than a look at the parsed values).
    nested = ("[" in raw or raw.find("{", 1) >= 0) and _nested(event)
    own = _own_id(event, caps)  # a refusal names it, where the event has one
    if nested and nests_deeper_than(raw, event, max_depth):
        deep = f"event nested too deeply (over {max_depth} levels)"
        return BadFrame("invalid_event", deep, event_id=own)
    if not isinstance(event, dict):
        return BadFrame("invalid_event", "an event must be a JSON object")
    if nested and holds_more_values_than(raw, event, max_values):
        many = f"event holds too many JSON values (over {max_values})"
        return BadFrame("invalid_event", many, event_id=own)
    kind = event.get("type")
    if not isinstance(kind, str) or not kind:
        return BadFrame("invalid_event", "an event needs a string 'type'", event_id=own)
    if (refused := refusal(len(raw), event, caps)) is not None:
        return BadFrame(refused.code, refused.message, refused.param, refused.event_id)
    return ClientFrame(raw, event, now_ms())


def _own_id(event: Any, caps: FieldCaps) -> str | None:
    """The event's own ``event_id``, if it is a string within its cap."""
    event_id = event.get("event_id") if isinstance(event, dict) else None
    ok = isinstance(event_id, str) and len(event_id) <= caps.event_id_chars
    return event_id if ok else None


def parse_flat_ascii(raw: bytearray, caps: FieldCaps = DEFAULT_CAPS) -> dict[str, Any] | None:
    """The event of an ASCII frame's bytes (a client's, as it came: ``proxy/ws_raw.py``)
    when ``parse_client_frame`` of its text gives a ``ClientFrame`` with that event and
    no look at nesting: no '[' and no '{' after the first byte (an audio append); else
    None, and the text's path decides (``tests/test_client_frame_bytes.py``)."""
    if raw.find(b"[") >= 0 or raw.find(b"{", 1) >= 0:  # (find: faster than ``in`` on bytes)
        return None
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    if not isinstance(kind, str) or not kind or refusal(len(raw), event, caps) is not None:
        return None
    return event


def _nested(event: object) -> bool:
    """Whether an object holds any container: a flat one (an audio append) is one
    level deep, known without counting the brackets of its text."""
    if not isinstance(event, dict):
        return True
    for value in event.values():
        if isinstance(value, (dict, list)):
            return True
    return False
