"""Builders for the OpenAI Realtime GA server events the shim emits.

Field names follow the ``openai`` package's generated types
(``openai/types/realtime/*.py``): e.g. ``response.output_audio.delta`` carries
``response_id, item_id, output_index, content_index, delta``. ``event_id`` is added
by the edge when the event is sent, so builders stay pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ERROR_TYPES = {
    "upstream_unavailable": "server_error",
    "upstream_error": "server_error",
    "upstream_refused": "server_error",  # a refusal that named no code of its own
    "internal_error": "server_error",
    "session_store_unavailable": "server_error",
    "rate_limit_exceeded": "rate_limit_error",
    "session_limit_reached": "rate_limit_error",
    "server_at_capacity": "rate_limit_error",
    "upstream_at_capacity": "rate_limit_error",
    "input_rate_exceeded": "rate_limit_error",
    "input_backpressure": "rate_limit_error",
}


def error(
    code: str,
    message: str,
    *,
    event_id: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """``{type: error, error: {type, code, message, event_id, param}}``: the GA envelope
    (``docs/protocol.md``, "Errors")."""
    return {
        "type": "error",
        "error": {
            "type": ERROR_TYPES.get(code, "invalid_request_error"),
            "code": code,
            "message": message,
            "event_id": event_id,
            "param": param,
        },
    }


# An item the session does not have, refused as OpenAI refuses it: the code names the
# request (GA's ``item_<verb>_invalid_item_id``), the words the item. vLLM-Omni says
# ``item_not_found`` for all three (``shim/native_client.py`` tells a native client so).
UNKNOWN_ITEM = {
    "conversation.item.retrieve": ("item_retrieve_invalid_item_id", "retrieving"),
    "conversation.item.truncate": ("item_truncate_invalid_item_id", "truncating"),
    "conversation.item.delete": ("item_delete_invalid_item_id", "deleting"),
}


# OpenAI's words for a truncate of an item there is that is not the assistant's audio
# (the proxy tells them in GA's code for a truncate of an item it cannot cut).
NOT_ASSISTANT_AUDIO = "Only model output audio messages can be truncated"


def unknown_item(request: str, item_id: object) -> tuple[str, str]:
    """GA's code and OpenAI's words for a ``request`` naming an item that is not there."""
    code, verb = UNKNOWN_ITEM[request]
    return code, f"Error {verb} item: the item with id '{item_id}' does not exist."


# vLLM-Omni's words for an item it does not have, in any request (``item_not_found``;
# its ``engine/duplex/realtime_events.py``, ``resolve_truncate_item``).
NATIVE_NOT_FOUND = "Conversation item not found: "


def native_unknown_item(err: Mapping[str, Any]) -> str | None:
    """The item an error's body ``err`` says vLLM-Omni does not have, or None."""
    message = err.get("message")
    if err.get("code") != "item_not_found" or not isinstance(message, str):
        return None
    return message.removeprefix(NATIVE_NOT_FOUND) if message.startswith(NATIVE_NOT_FOUND) else None


def error_code(event: Mapping[str, Any]) -> str | None:
    """The ``code`` of an error event in either shape: GA nests it (``{error: {code}}``),
    vLLM-Omni's turn-based dialect puts it at the top (``{error: "...", code}``)."""
    err = event.get("error")
    code = err.get("code") if isinstance(err, Mapping) else None
    if not isinstance(code, str) or not code:
        code = event.get("code")
    return code if isinstance(code, str) and code else None


def user_item(
    item_id: str, status: str = "completed", transcript: str | None = None
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "object": "realtime.item",
        "status": status,
        "role": "user",
        "content": [{"type": "input_audio", "transcript": transcript}],
    }


def assistant_item(item_id: str, status: str, transcript: str | None) -> dict[str, Any]:
    content = [] if transcript is None else [{"type": "output_audio", "transcript": transcript}]
    return {
        "id": item_id,
        "type": "message",
        "object": "realtime.item",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def response(
    response_id: str,
    status: str,
    output: list[dict[str, Any]],
    status_details: dict[str, Any] | None = None,
    conversation_id: str | None = None,
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "realtime.response",
        "status": status,
        "status_details": status_details,
        "output": output,
        "conversation_id": conversation_id,
        "output_modalities": ["audio"],
        "usage": None,
        "metadata": None,
    }


# The reasons GA gives a response that did not complete; any other cause (the upstream
# lost, its error code) is told as the response's error, which GA clients validate.
GA_REASONS = frozenset({"turn_detected", "client_cancelled", "max_output_tokens", "content_filter"})


def status_details(status: str, reason: str | None) -> dict[str, Any] | None:
    """A response's ``status_details`` in GA's shape: ``reason`` only from GA's list."""
    if status == "completed":
        return None
    if reason is None or reason in GA_REASONS:
        return {"type": status, "reason": reason}
    return {"type": status, "error": {"type": "server_error", "code": reason}}


def part_ids(response_id: str, item_id: str) -> dict[str, Any]:
    return {"response_id": response_id, "item_id": item_id, "output_index": 0, "content_index": 0}


def speech_started(item_id: str, audio_start_ms: int) -> dict[str, Any]:
    return {
        "type": "input_audio_buffer.speech_started",
        "audio_start_ms": audio_start_ms,
        "item_id": item_id,
    }


def speech_stopped(item_id: str, audio_end_ms: int) -> dict[str, Any]:
    return {
        "type": "input_audio_buffer.speech_stopped",
        "audio_end_ms": audio_end_ms,
        "item_id": item_id,
    }


def output_paused(
    response_id: str | None, item_id: str | None, reason: str, audio_start_ms: int
) -> dict[str, Any]:
    """Extension (opt-in, ``docs/protocol.md``): the assistant's audio is held while
    speech over it is judged; ``audio_start_ms`` is that speech's onset."""
    return {
        "type": "output_audio_buffer.paused",
        "response_id": response_id,
        "item_id": item_id,
        "reason": reason,
        "audio_start_ms": audio_start_ms,
    }


def output_resumed(response_id: str | None, item_id: str | None, reason: str) -> dict[str, Any]:
    """Extension (opt-in): the held audio goes on; ``reason`` says why it was not a
    barge-in (backchannel, echo, background_speech, noise, hold_limit, input_cleared)."""
    return {
        "type": "output_audio_buffer.resumed",
        "response_id": response_id,
        "item_id": item_id,
        "reason": reason,
    }


def committed(item_id: str, previous_item_id: str | None) -> dict[str, Any]:
    return {
        "type": "input_audio_buffer.committed",
        "item_id": item_id,
        "previous_item_id": previous_item_id,
    }


def item_event(kind: str, item: dict[str, Any], previous_item_id: str | None) -> dict[str, Any]:
    return {"type": f"conversation.item.{kind}", "previous_item_id": previous_item_id, "item": item}


def truncated(item_id: str, audio_end_ms: int) -> dict[str, Any]:
    return {
        "type": "conversation.item.truncated",
        "item_id": item_id,
        "content_index": 0,
        "audio_end_ms": audio_end_ms,
    }


def response_end(
    response_id: str,
    item_id: str,
    status: str,
    transcript: str,
    reason: str | None,
    previous_item_id: str | None = None,
) -> list[dict[str, Any]]:
    """Every event that closes a spoken response, in GA order, ending in response.done."""
    item = assistant_item(
        item_id, "completed" if status == "completed" else "incomplete", transcript
    )
    ids = part_ids(response_id, item_id)
    details = status_details(status, reason)
    return [
        {"type": "response.output_audio.done", **ids},
        {"type": "response.output_audio_transcript.done", **ids, "transcript": transcript},
        {
            "type": "response.content_part.done",
            **ids,
            "part": {"type": "audio", "transcript": transcript},
        },
        {
            "type": "response.output_item.done",
            "response_id": response_id,
            "output_index": 0,
            "item": item,
        },
        item_event("done", item, previous_item_id),
        {"type": "response.done", "response": response(response_id, status, [item], details)},
    ]
