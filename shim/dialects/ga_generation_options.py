"""A GA ``response.create``'s generation options, which no upstream here carries.

vLLM-Omni 0.30.0's duplex runtime takes no generation overrides: a ``response.create``
naming any of ``OPTIONS`` (or ``audio.output.voice``), set to anything but null, even
an empty tool list, is refused whole with its own ``unsupported_native_response_options``,
naming no option (``engine/duplex/config.py``, ``ResponseCreateOptions``). A GA client
knows neither that code nor which option it was, and GA takes an option that asks for
nothing (no tools, ``tool_choice: "auto"`` or ``"none"``, ``max_output_tokens: "inf"``)
as given.
So, as over a turn-based upstream (``shim/dialects/turn_limits.py``), an option that
asks for something is refused with ``unsupported_by_upstream`` naming it, and one that
asks for nothing is left out of what goes upstream (``docs/protocol.md``).
"""

from __future__ import annotations

from typing import Any

OPTIONS = (
    "instructions",
    "voice",
    "temperature",
    "max_response_output_tokens",
    "max_output_tokens",
    "max_tokens",
    "tools",
    "tool_choice",
)
# Per option (and per session setting: ``turn_limits.py``), the values that ask for
# nothing beyond what every answer here is (GA's defaults, or no tools at all); "auto"
# is instructions to follow, not a default. LiveKit states speed 1.0 in every update.
_NOTHING: dict[str, tuple[Any, ...]] = {
    "instructions": (None, ""),
    "voice": (None,),
    "temperature": (None,),
    "max_response_output_tokens": (None, "inf"),
    "max_output_tokens": (None, "inf"),
    "max_tokens": (None, "inf"),
    "tools": (None, []),
    "tool_choice": (None, "auto", "none"),
    "conversation": (None, "auto"),
    "input": (None, []),
    "speed": (None, 1, 1.0),
    "include": (None, []),
}
_DEFAULT: tuple[Any, ...] = (None, "", [], "auto", "inf")  # another option's


def asks(key: str, value: Any) -> bool:
    """``value`` of the option ``key`` asks for something."""
    nothing = _NOTHING.get(key, _DEFAULT)
    return not any(value == none and type(value) is type(none) for none in nothing)


def _without_empty(options: dict[str, Any]) -> dict[str, Any]:
    """``audio.output`` and ``audio`` left out once nothing is left in them."""
    audio = options.get("audio")
    if not isinstance(audio, dict):
        return options
    audio = {k: v for k, v in audio.items() if not (k == "output" and v == {})}
    rest = {k: v for k, v in options.items() if k != "audio"}
    return rest if not audio else {**rest, "audio": audio}


def screened(options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The first option that asks for something, as a ``param`` (None if none does),
    and the options without those that ask for nothing."""
    for key in OPTIONS:
        if key in options and asks(key, options[key]):
            return f"response.{key}", options
    kept = {k: v for k, v in options.items() if k not in OPTIONS}
    audio = kept.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    if isinstance(audio, dict) and isinstance(output, dict) and "voice" in output:
        if asks("voice", output["voice"]):
            return "response.audio.output.voice", options
        rest = {k: v for k, v in output.items() if k != "voice"}
        kept = _without_empty({**kept, "audio": {**audio, "output": rest}})
    return None, kept
