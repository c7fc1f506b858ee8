"""The sizes of the client fields a session keeps: an ``event_id``, ``instructions``, ``tools``.

A session remembers its client's recent ``event_id``s (to skip a re-sent event), and
its ``instructions`` and ``tools`` are settings it keeps, checkpoints and tells back;
a frame may be as big as ``server.max_frame_bytes``, so each of these is bounded on
its own (``[server] max_event_id_chars``, ``max_instructions_chars``, ``max_tools_bytes``).
An event over one is refused at the edge, before any session sees it, in every mode:
``invalid_event`` for an ``event_id`` (the error names no event: the id is not told
back), ``invalid_value`` for the others, with the field as ``param``; the session goes
on. OpenAI documents no length for any of them.

Only a frame longer than a cap can hold a field over it: a frame costs a few look-ups
and length comparisons, and only a ``session.update`` or ``response.create`` longer
than a cap has its settings measured (``refusal``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from proxy.config import ServerConfig

# What an event with these fields at its top level (GA's and vLLM-Omni's) may set.
_SETTINGS_OF = {"session.update": "session", "response.create": "response"}
UTF8_MAX = 4  # bytes a character of the frame's text may be once dumped (tools)


@dataclass(frozen=True, slots=True)
class FieldCaps:
    event_id_chars: int
    instructions_chars: int
    tools_bytes: int

    @classmethod
    def from_config(cls, cfg: ServerConfig) -> FieldCaps:
        return cls(cfg.max_event_id_chars, cfg.max_instructions_chars, cfg.max_tools_bytes)


DEFAULT_CAPS = FieldCaps.from_config(ServerConfig())  # the config's defaults


@dataclass(frozen=True, slots=True)
class Refusal:
    code: str
    message: str
    param: str
    event_id: str | None  # the event's own, when it is one the error may name


def refusal(raw_len: int, event: dict[str, Any], caps: FieldCaps) -> Refusal | None:
    """Why an event (its text ``raw_len`` characters long) is refused, or None."""
    event_id = event.get("event_id")
    if raw_len > caps.event_id_chars and isinstance(event_id, str):
        if len(event_id) > caps.event_id_chars:
            words = _too_long("event_id", caps.event_id_chars, len(event_id))
            return Refusal("invalid_event", words, "event_id", None)
    key = _SETTINGS_OF.get(event.get("type"))  # type: ignore[arg-type]
    if key is None or raw_len <= min(caps.instructions_chars, caps.tools_bytes // UTF8_MAX):
        return None
    settings = event.get(key)
    if not isinstance(settings, dict):
        return None
    own_id = event_id if isinstance(event_id, str) else None
    instructions = settings.get("instructions")
    if isinstance(instructions, str) and len(instructions) > caps.instructions_chars:
        words = _too_long(f"{key}.instructions", caps.instructions_chars, len(instructions))
        return Refusal("invalid_value", words, f"{key}.instructions", own_id)
    tools = settings.get("tools")
    if tools is not None and raw_len * UTF8_MAX > caps.tools_bytes:
        size = len(orjson.dumps(tools))
        if size > caps.tools_bytes:
            words = (
                f"Invalid '{key}.tools': too large. Expected at most {caps.tools_bytes}"
                f" bytes of JSON, but got {size} bytes."
            )
            return Refusal("invalid_value", words, f"{key}.tools", own_id)
    return None


def _too_long(name: str, cap: int, got: int) -> str:
    """OpenAI's words for a string over its maximum length."""
    return (
        f"Invalid '{name}': string too long. Expected a string with maximum length {cap},"
        f" but got a string with length {got} instead."
    )
