"""The GA session fields beyond formats and turn detection, read from ``session.update``:
the session's type, output modalities, input transcription, input noise reduction.

Each is applied as far as the mode can, or refused with a coded error
(``docs/protocol.md``, "Client events"), never accepted and then ignored:

* ``type: "transcription"``: GA's transcription session answers nothing (it only
  transcribes the input), but every session here answers its turns, so it is
  ``unsupported_by_upstream`` and the update changes nothing; ``"realtime"`` is what
  every session is, any other type ``invalid_value``; a native client's ``type`` is not
  read (vLLM-Omni ignores it);
* ``output_modalities`` (beta ``modalities``): every answer is spoken, its transcript
  alongside, so a list without ``"audio"`` (text-only) is ``unsupported_by_upstream``;
* ``audio.input.transcription`` and ``audio.input.noise_reduction`` (beta
  ``input_audio_transcription``, ``input_audio_noise_reduction``): an object of GA's
  shape (``invalid_value`` otherwise) or null, kept and told back in
  ``session.updated``. Over a duplex upstream they go to it
  (vLLM-Omni reads both); a turn-based upstream has neither, so ``duplex_emulated``
  refuses them (``shim/dialects/turn_limits.py``).
"""

from __future__ import annotations

from typing import Any

from shim.audio_formats import SessionConfigError

UNSUPPORTED = "unsupported_by_upstream"
# (GA key under audio.input, beta key at the top level)
INPUT_OPTIONS = {
    "transcription": "input_audio_transcription",
    "noise_reduction": "input_audio_noise_reduction",
}
_UNSET = object()
# GA's shapes of the objects (told back in session.updated, which must parse as GA):
# transcription's fields are strings; noise reduction names a known microphone.
_STRING_FIELDS = {"transcription": ("model", "language", "prompt"), "noise_reduction": ()}
NOISE_TYPES = ("near_field", "far_field")


def check_session_type(session: dict[str, Any], native: bool = False) -> None:
    """A GA client's ``type``; a native client's is not read (vLLM-Omni ignores it)."""
    kind = session.get("type")
    if native or kind is None or kind == "realtime":
        return
    if kind == "transcription":
        msg = "a transcription session (input transcribed, no responses) is not served here"
        raise SessionConfigError(UNSUPPORTED, msg, "session.type")
    msg = f"session.type {kind!r}: a session here is of type 'realtime'"
    raise SessionConfigError("invalid_value", msg, "session.type")


# A GA client's session fields that must be of one JSON type when given (null: not
# given): anything else would be taken as nothing, or passed on to the upstream as is.
_TYPED = (
    (("audio",), dict, "an object"),
    (("audio", "input"), dict, "an object"),
    (("audio", "output"), dict, "an object"),
    (("instructions",), str, "a string"),
    (("tools",), list, "a list"),
)


def check_field_types(session: dict[str, Any], native: bool = False) -> None:
    """A GA client's fields of the wrong JSON type are ``invalid_value`` naming them (a
    native client's are vLLM-Omni's to read)."""
    if native:
        return
    for path, kind, words in _TYPED:
        node: Any = session
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None and not isinstance(node, kind):
            name = ".".join(path)
            raise SessionConfigError("invalid_value", f"{name} must be {words}", f"session.{name}")


def check_modalities(session: dict[str, Any]) -> None:
    value = session.get("output_modalities", session.get("modalities"))
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise SessionConfigError(
            "invalid_value", "output_modalities must be a list", "session.output_modalities"
        )
    if "audio" not in value:
        msg = f"output_modalities {value!r}: every answer is spoken here (its transcript alongside)"
        raise SessionConfigError(UNSUPPORTED, msg, "session.output_modalities")


# GA's bound on an answer's tokens (``max_output_tokens``: 1..4096, or "inf").
MAX_OUTPUT_TOKENS = 4096


def check_max_output_tokens(session: dict[str, Any], native: bool = False) -> None:
    """A GA client's limit on an answer's tokens, as GA takes it: a whole number from 1
    to 4096, or ``"inf"`` (null: not given). A native client's is vLLM-Omni's to read."""
    if native:
        return
    for key in ("max_output_tokens", "max_response_output_tokens"):
        value = session.get(key)
        if value is None or value == "inf":
            continue
        whole = isinstance(value, int) and not isinstance(value, bool)
        if not whole or not 1 <= value <= MAX_OUTPUT_TOKENS:
            msg = f'{key} must be a whole number from 1 to {MAX_OUTPUT_TOKENS}, or "inf"'
            raise SessionConfigError("invalid_value", msg, f"session.{key}")


def input_option(session: dict[str, Any], a_in: dict[str, Any], name: str) -> Any:
    """The ``name`` input option an update sets (an object, or None to clear), or
    ``_UNSET`` when it says nothing of it; anything else is ``invalid_value``."""
    beta = INPUT_OPTIONS[name]
    value = a_in[name] if name in a_in else session[beta] if beta in session else _UNSET
    if value is _UNSET or value is None:
        return value
    param = f"session.audio.input.{name}"
    if not isinstance(value, dict):
        raise SessionConfigError("invalid_value", f"{name} must be an object or null", param)
    for key in _STRING_FIELDS[name]:
        if value.get(key) is not None and not isinstance(value[key], str):
            raise SessionConfigError("invalid_value", f"{name}.{key} must be a string", param)
    if name == "noise_reduction" and value.get("type") not in (None, *NOISE_TYPES):
        msg = f"noise_reduction.type must be one of {list(NOISE_TYPES)} or null"
        raise SessionConfigError("invalid_value", msg, param)
    return value


def is_unset(value: Any) -> bool:
    return value is _UNSET
