"""A GA ``response.create``'s generation options, which no upstream here carries.

vLLM-Omni 0.30.0's duplex runtime takes no generation overrides: a ``response.create``
naming any of ``OPTIONS`` (or ``audio.output.voice``), set to anything but null, even
an empty tool list, is refused whole with its own ``unsupported_native_response_options``,
naming no option (``engine/duplex/config.py``, ``ResponseCreateOptions``). A GA client
knows neither that code nor which option it was, and GA takes an option that asks for
nothing (no tools, ``tool_choice: "auto"``, ``max_output_tokens: "inf"``) as given.
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
# Values that ask for nothing beyond what every answer here is.
_NOTHING: tuple[Any, ...] = (None, "", [], "auto", "inf")


def asks(value: Any) -> bool:
    return not any(value == nothing and type(value) is type(nothing) for nothing in _NOTHING)


def screened(options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The first option that asks for something, as a ``param`` (None if none does),
    and the options without those that ask for nothing."""
    for key in OPTIONS:
        if key in options and asks(options[key]):
            return f"response.{key}", options
    kept = {k: v for k, v in options.items() if k not in OPTIONS}
    audio = kept.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    if isinstance(audio, dict) and isinstance(output, dict) and "voice" in output:
        if asks(output["voice"]):
            return "response.audio.output.voice", options
        rest = {k: v for k, v in output.items() if k != "voice"}
        kept["audio"] = {**audio, "output": rest}
    return None, kept
