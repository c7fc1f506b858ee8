"""The fields an OpenAI GA server event declares, and nothing else, for a GA client.

vLLM-Omni's GA-typed events carry keys of its own beside GA's: ``event`` (its session
id, turn id, transcript) in ``input_audio_buffer.committed``, ``format``,
``sample_rate_hz`` and ``metadata`` in every audio delta, a top-level
``response_id`` and ``modalities`` in its responses, ``audio_duration_ms`` and
``audio_text_marks`` in its items' content. A GA client parses them leniently, but
they are not GA (``docs/protocol.md``: GA clients get only GA events and values): the
last step of the GA relay (``ga_relay.py``) keeps of each event the fields the
``openai`` SDK's GA models declare (``tests/test_ga_declared_fields.py`` holds the
tables to them), vLLM-Omni's ``modalities`` told as GA's ``output_modalities``.
Events GA does not know (the announced extensions) are left as they are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from shim.actions import Action, SendClient, SendClientAudio

_BASE = frozenset({"type", "event_id"})
_IN_RESPONSE = _BASE | {"response_id", "item_id", "output_index"}
_PART = _IN_RESPONSE | {"content_index"}

# Each GA server event type's own fields (``openai.types.realtime``).
TOP: dict[str, frozenset[str]] = {
    "conversation.created": _BASE | {"conversation"},
    "conversation.item.added": _BASE | {"item", "previous_item_id"},
    "conversation.item.created": _BASE | {"item", "previous_item_id"},
    "conversation.item.deleted": _BASE | {"item_id"},
    "conversation.item.done": _BASE | {"item", "previous_item_id"},
    "conversation.item.input_audio_transcription.completed": _BASE
    | {"item_id", "content_index", "transcript", "usage", "logprobs", "languages"},
    "conversation.item.input_audio_transcription.delta": _BASE
    | {"item_id", "content_index", "delta", "logprobs"},
    "conversation.item.input_audio_transcription.failed": _BASE
    | {"item_id", "content_index", "error"},
    "conversation.item.input_audio_transcription.segment": _BASE
    | {"item_id", "content_index", "id", "text", "speaker", "start", "end"},
    "conversation.item.retrieved": _BASE | {"item"},
    "conversation.item.truncated": _BASE | {"item_id", "content_index", "audio_end_ms"},
    "error": _BASE | {"error"},
    "input_audio_buffer.cleared": _BASE,
    "input_audio_buffer.committed": _BASE | {"item_id", "previous_item_id"},
    "input_audio_buffer.dtmf_event_received": frozenset({"type", "event", "received_at"}),
    "input_audio_buffer.speech_started": _BASE | {"item_id", "audio_start_ms"},
    "input_audio_buffer.speech_stopped": _BASE | {"item_id", "audio_end_ms"},
    "input_audio_buffer.timeout_triggered": _BASE | {"item_id", "audio_start_ms", "audio_end_ms"},
    "output_audio_buffer.cleared": _BASE | {"response_id"},
    "output_audio_buffer.started": _BASE | {"response_id"},
    "output_audio_buffer.stopped": _BASE | {"response_id"},
    "rate_limits.updated": _BASE | {"rate_limits"},
    "response.content_part.added": _PART | {"part"},
    "response.content_part.done": _PART | {"part"},
    "response.created": _BASE | {"response"},
    "response.done": _BASE | {"response"},
    "response.function_call_arguments.delta": _IN_RESPONSE | {"call_id", "delta"},
    "response.function_call_arguments.done": _IN_RESPONSE | {"call_id", "arguments", "name"},
    "response.output_audio.delta": _PART | {"delta"},
    "response.output_audio.done": _PART,
    "response.output_audio_transcript.delta": _PART | {"delta"},
    "response.output_audio_transcript.done": _PART | {"transcript"},
    "response.output_item.added": _BASE | {"response_id", "output_index", "item"},
    "response.output_item.done": _BASE | {"response_id", "output_index", "item"},
    "response.output_text.delta": _PART | {"delta"},
    "response.output_text.done": _PART | {"text"},
}
# A response object's (``RealtimeResponse``).
RESPONSE = frozenset(
    {
        "id",
        "object",
        "status",
        "status_details",
        "output",
        "output_modalities",
        "audio",
        "conversation_id",
        "max_output_tokens",
        "metadata",
        "usage",
    }
)
# A conversation item's, over every kind of item GA has.
ITEM = frozenset(
    {
        "id",
        "object",
        "type",
        "role",
        "status",
        "content",
        "call_id",
        "name",
        "arguments",
        "output",
        "approval_request_id",
        "approve",
        "reason",
        "server_label",
        "tools",
        "error",
    }
)
# A content part's, over every kind of part GA has.
PART = frozenset({"type", "text", "audio", "transcript", "image_url", "detail"})
# Where the session's own objects are: the proxy makes them (``session_config.py``).
SESSION_EVENTS = frozenset({"session.created", "session.updated"})


def _only(obj: dict[str, Any], keep: frozenset[str]) -> dict[str, Any]:
    return obj if obj.keys() <= keep else {k: v for k, v in obj.items() if k in keep}


def _part(part: Any) -> Any:
    return _only(part, PART) if isinstance(part, dict) else part


def _item(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    out = _only(item, ITEM)
    content = out.get("content")
    if isinstance(content, list):
        out = {**out, "content": [_part(p) for p in content]}
    return out


def _response(resp: Any) -> Any:
    if not isinstance(resp, dict):
        return resp
    out = _only(resp, RESPONSE)
    modalities = resp.get("modalities")
    if "output_modalities" not in out:
        # vLLM-Omni's ``["text", "audio"]`` is a spoken answer with its transcript,
        # which GA names ``["audio"]`` (GA takes one of the two); so is one that names
        # none (its ``response.done``): every answer here is spoken
        # (``shim/session_options.py``), as ``duplex_emulated`` tells it.
        text = isinstance(modalities, list) and "audio" not in modalities
        out = {**out, "output_modalities": ["text"] if text else ["audio"]}
    output = out.get("output")
    if isinstance(output, list):
        out = {**out, "output": [_item(i) for i in output]}
    return out


def only_ga(ev: dict[str, Any]) -> dict[str, Any]:
    """``ev`` with only its GA type's fields (a copy where any other was there);
    an event GA does not know, or a session's, as it is."""
    keep = TOP.get(ev.get("type"))  # type: ignore[arg-type]
    if keep is None:
        return ev
    out = _only(ev, keep)
    if "item" in out:
        out = {**out, "item": _item(out["item"])}
    if "part" in out:
        out = {**out, "part": _part(out["part"])}
    if "response" in out:
        out = {**out, "response": _response(out["response"])}
    return out


def told(actions: list[Action]) -> list[Action]:
    """``actions`` with each event for the client as ``only_ga`` keeps it."""
    out: list[Action] = []
    for action in actions:
        if isinstance(action, (SendClient, SendClientAudio)):
            ev = only_ga(action.event)
            if ev is not action.event:
                action = replace(action, event=ev)
        out.append(action)
    return out
