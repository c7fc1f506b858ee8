"""The settings of a client's ``session.update`` as vLLM-Omni reads them, one by one,
for the fold of its updates (``relay_kept_update.py``): where each is spelled, which
spelling an update takes it from, and which values leave the earlier one standing
(``engine/duplex/config.py``, ``apply_realtime_update``).

The two policies, ``overlap_policy`` and ``playback_commit_policy``, are read flat and
from ``extra_body``, that one last, so it wins within one update; a later update in
either spelling replaces the earlier one (the session keeps one value), and a named
turn detection sets the overlap policy it implies (``engine/duplex/turn_detection.py``,
``normalize_turn_detection_session_payload``, before the update applies). An
``extra_body`` is merged into, so an earlier copy there would outlive a later flat
value in the fold and, read last, override it: the fold keeps one spelling of each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Path = tuple[str, ...]
TURN: tuple[Path, ...] = (("turn_detection",), ("audio", "input", "turn_detection"))
POLICIES = ("overlap_policy", "playback_commit_policy")
BARGE_IN = "barge_in_on_speech"


def get(session: dict[str, Any], path: Path) -> tuple[bool, Any]:
    node: Any = session
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def names(session: dict[str, Any], group: tuple[Path, ...]) -> bool:
    return any(get(session, path)[0] for path in group)


def drop(session: dict[str, Any], group: tuple[Path, ...]) -> None:
    for *parents, key in group:
        node: Any = session
        for parent in parents:
            node = node.get(parent) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(key, None)


def put(session: dict[str, Any], path: Path, value: Any) -> None:
    node = session
    for key in path[:-1]:
        child = node.get(key)
        node[key] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    node[path[-1]] = value


# Settings as ``apply_realtime_update`` reads them, each with its spellings and the
# reader of an update: the spelling it takes the value from, ``()`` when it changes it
# by none, None when it leaves it (not named, or named by a value it ignores).
Read = Callable[[dict[str, Any]], "Path | None"]
_NUMBER = (int, float)
_TOKENS = ("max_response_output_tokens", "max_output_tokens", "max_tokens")
NOISE: tuple[Path, ...] = (("input_audio_noise_reduction",), ("audio", "input", "noise_reduction"))


def _typed(path: Path, kinds: tuple[type, ...], clears: bool, nested: Path = ()) -> Read:
    """A ``kinds`` under ``path``, else ``nested``; a ``null`` at ``path`` may clear it."""

    def read(session: dict[str, Any]) -> Path | None:
        named, value = get(session, path)
        if isinstance(value, kinds):
            return path
        if nested and isinstance(get(session, nested)[1], kinds):
            return nested
        return path if clears and named and value is None else None

    return read


def _max_tokens(session: dict[str, Any]) -> Path | None:
    """The first spelling named, whatever its value (``null``, ``"inf"``: no limit)."""
    return next(((n,) for n in _TOKENS if n in session), None)


def _modalities(session: dict[str, Any]) -> Path | None:
    """The first of its spellings set, taken if it is a list of names."""
    name = "modalities" if session.get("modalities") else "output_modalities"
    value = session.get(name)
    ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return (name,) if ok else None


def _noise(session: dict[str, Any]) -> Path | None:
    """Nested, else cleared by an ``audio.input`` without it, else flat (``null`` clears)."""
    nested = get(session, NOISE[1])[1]
    if isinstance(nested, dict):
        return NOISE[1]
    if nested is None and isinstance(get(session, ("audio", "input"))[1], dict):
        return ()
    return _typed(NOISE[0], (dict,), clears=True)(session)


def _policy(name: str) -> Read:
    """From ``extra_body`` (read last), else flat; a named turn detection sets the
    overlap policy by neither (``()``)."""

    def read(session: dict[str, Any]) -> Path | None:
        if isinstance(get(session, ("extra_body", name))[1], str):
            return ("extra_body", name)
        if isinstance(session.get(name), str):
            return (name,)
        return () if name == POLICIES[0] and names(session, TURN) else None

    return read


def _one(path: Path, kinds: tuple[type, ...], clears: bool = True, nested: Path = ()) -> Any:
    return ((path, nested) if nested else (path,)), _typed(path, kinds, clears, nested)


SETTINGS: tuple[tuple[tuple[Path, ...], Read], ...] = (
    _one(("voice",), (str,), nested=("audio", "output", "voice")),
    _one(("speed",), _NUMBER, False, nested=("audio", "output", "speed")),
    _one(("input_audio_transcription",), (dict,), nested=("audio", "input", "transcription")),
    (NOISE, _noise),
    (tuple((n,) for n in _TOKENS), _max_tokens),
    ((("modalities",), ("output_modalities",)), _modalities),
    *((((name,), ("extra_body", name)), _policy(name)) for name in POLICIES),
    *(
        _one((name,), kinds, clears)
        for name, kinds, clears in (
            ("instructions", (str,), True),
            ("temperature", _NUMBER, False),
            ("overlap_short_ack_ms", _NUMBER, False),
            ("overlap_barge_in_ms", _NUMBER, False),
            ("overlap_silence_rms", _NUMBER, False),
            ("tools", (list,), True),
            ("tool_choice", (str, dict), True),
            ("metadata", (dict,), True),
            ("include", (list,), True),
            ("prompt", (dict,), True),
            ("tracing", (str, dict), True),
        )
    ),
)


def stated_where_read(session: dict[str, Any]) -> None:
    """The folded update made to read as the updates did: a flat noise reduction
    under ``audio.input`` when it has one (vLLM-Omni clears it on reading an
    ``audio.input`` without it), and a flat overlap policy the turn detection would
    refuse (``validate_realtime_turn_detection``: it must agree) in ``extra_body``,
    which is not checked and overrides the one the turn detection implies."""
    flat, inner = get(session, NOISE[0])[1], get(session, ("audio", "input"))[1]
    if isinstance(flat, dict) and isinstance(inner, dict) and inner.get("noise_reduction") is None:
        inner["noise_reduction"] = session.pop(NOISE[0][0])
    policy = session.get(POLICIES[0])
    detection = next((get(session, path) for path in reversed(TURN) if get(session, path)[0]), None)
    if policy is None or detection is None:
        return
    if policy != (BARGE_IN if detection[1] is not None else "listen_only"):
        put(session, ("extra_body", POLICIES[0]), session.pop(POLICIES[0]))
