"""The generation settings a GA ``session.created``/``session.updated`` tells back:
what is in effect, not only the formats and turn detection the proxy itself serves.

GA's session object states the whole session. The proxy tells back a setting only as
far as it knows it runs (``docs/protocol.md``, "Client events"):

* over a duplex upstream (``barge_in_emulated``) each setting the client's updates
  gave the upstream, folded as vLLM-Omni applies them (``shim/dialects/
  relay_kept_update.py``): the voice and speed, ``max_output_tokens``, ``tools``,
  ``tool_choice``, ``prompt``, ``include``; GA's default for those never set (no
  tools, ``tool_choice: "auto"``, speed 1.0, no prompt), none for the voice or the
  token limit the upstream's own defaults decide;
* over a turn-based upstream (``duplex_emulated``), which takes none of them (a
  ``session.update`` asking for one is refused: ``shim/dialects/turn_limits.py``):
  speed 1.0, no tools, ``tool_choice: "auto"`` (or ``"none"`` as the client gave it,
  which asks for nothing more: ``shim/session_config.py``), no prompt, nothing
  included; neither the voice nor the token limit, which are the model's own.

``tracing`` is null in both: the proxy writes no traces, nor does vLLM-Omni.
``truncation`` is left out: how the upstream fits a long conversation is its own.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

_TOKENS = ("max_response_output_tokens", "max_output_tokens", "max_tokens")
_NUMBER = (int, float)

# What a turn-based upstream runs with, whatever the client asks.
TURN_BASED: Mapping[str, Any] = {
    "speed": 1.0,
    "tools": [],
    "tool_choice": "auto",
    "prompt": None,
    "include": None,
    "tracing": None,
}


def _output(session: Mapping[str, Any]) -> Mapping[str, Any]:
    audio = session.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    return output if isinstance(output, dict) else {}


# Told as the upstream took them, when of these types.
_RELAYED_AS_GIVEN: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("tools", list),
    ("tool_choice", (str, dict)),
    ("prompt", dict),
    ("include", list),
)


def relayed(kept: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a duplex upstream runs with, from every update it took folded into one
    (``kept``: a ``session.update``, the relay's ``kept_update()``)."""
    session = kept.get("session") if kept is not None else None
    session = session if isinstance(session, dict) else {}
    output = _output(session)
    told: dict[str, Any] = dict(TURN_BASED)
    voice = session.get("voice", output.get("voice"))
    if isinstance(voice, str):
        told["voice"] = voice
    speed = session.get("speed", output.get("speed"))
    if isinstance(speed, _NUMBER) and not isinstance(speed, bool):
        told["speed"] = speed
    named = next((n for n in _TOKENS if n in session), None)
    if named is not None:
        tokens = session[named]
        limited = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0
        told["max_output_tokens"] = tokens if limited else "inf"  # vLLM-Omni: no limit
    for key, kinds in _RELAYED_AS_GIVEN:
        if isinstance(session.get(key), kinds):
            told[key] = session[key]
    return copy.deepcopy(told)


def merged(session: dict[str, Any], told: Mapping[str, Any]) -> dict[str, Any]:
    """The GA session object with ``told`` in it: the voice and speed under
    ``audio.output``, the rest at the top."""
    out = {**session, **{k: v for k, v in told.items() if k not in ("voice", "speed")}}
    said = {k: told[k] for k in ("voice", "speed") if k in told}
    audio = out.get("audio")
    if said and isinstance(audio, dict):
        output = audio.get("output")
        output = output if isinstance(output, dict) else {}
        out["audio"] = {**audio, "output": {**output, **said}}
    return out
