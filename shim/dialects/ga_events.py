"""A duplex upstream's events as an OpenAI GA client may get them.

vLLM-Omni sends every duplex client events that are not OpenAI GA and GA-typed events
with values outside the GA enums (``docs/fidelity.md``, row 15). A GA client parses
server events into the GA types, so for it (``/v1/realtime`` without ``?duplex=1``)
the barge-in relay drops the non-GA events and translates the values
(``docs/protocol.md``, "GA clients over a duplex upstream"). Native clients get the
upstream's events unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from shim.actions import NoteUpstreamError

# Every server event type of the OpenAI GA realtime API.
GA_SERVER_EVENTS = frozenset(
    {
        "conversation.created",
        "conversation.item.added",
        "conversation.item.created",
        "conversation.item.deleted",
        "conversation.item.done",
        "conversation.item.input_audio_transcription.completed",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.failed",
        "conversation.item.input_audio_transcription.segment",
        "conversation.item.retrieved",
        "conversation.item.truncated",
        "error",
        "input_audio_buffer.cleared",
        "input_audio_buffer.committed",
        "input_audio_buffer.dtmf_event_received",
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.timeout_triggered",
        "output_audio_buffer.cleared",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "rate_limits.updated",
        "response.content_part.added",
        "response.content_part.done",
        "response.created",
        "response.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_audio.delta",
        "response.output_audio.done",
        "response.output_audio_transcript.delta",
        "response.output_audio_transcript.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.output_text.done",
        "session.created",
        "session.updated",
    }
)

# The upstream's events the relay handles itself (they never reach the client as
# they are): kept for their handlers whatever their type.
HANDLED = frozenset({"session.created", "session.resumed", "session.replaced"})

# Answers to the extension commands a client sent itself: a GA client that sends
# ``session.heartbeat`` (docs/protocol.md) asked for the ack, so it is no surprise to it.
ANSWERS = frozenset({"session.heartbeat_ack"})

PATCHED = frozenset(
    {
        "conversation.item.input_audio_transcription.completed",
        "input_audio_buffer.speech_started",
        "output_audio_buffer.cleared",
    }
)

# A create's ``previous_item_id: "root"`` names where to insert its item: before every
# other. vLLM-Omni echoes it in the item's ``added`` / ``created``, where GA names the
# item before it, here none (``null``). (vLLM-Omni adds every item at the end of its
# conversation whatever the create names; its ``done`` names the item before it there.)
ITEM_ADDED = frozenset({"conversation.item.added", "conversation.item.created"})
ROOT = "root"

# Non-GA reasons of a response's end -> the GA enum.
REASONS = {
    "barge_in": "turn_detected",
    "turn_detected": "turn_detected",
    "output_audio_buffer_clear": "client_cancelled",
    "client_cancelled": "client_cancelled",
    "stop": None,  # the model ended its answer: GA says nothing for that
}
GA_REASONS = frozenset({"turn_detected", "client_cancelled", "max_output_tokens", "content_filter"})

# vLLM-Omni's error codes that name something OpenAI names otherwise -> OpenAI's code
# (docs/protocol.md: the empty commit; a response.cancel with no response to cancel,
# which a client's cancel racing the answer's end gets; a response.create over one).
ERROR_CODES = {
    "input_audio_buffer_empty": "input_audio_buffer_commit_empty",
    "response_not_active": "response_cancel_not_active",
    "response_already_active": "conversation_already_has_active_response",
}

# The event ids of the commands the proxy sends on its own begin so: an upstream error
# naming one answers the proxy, not the client.
OWN_PREFIX = "proxy_"
# Commands the proxy sends on its own; their event ids say so (``own_error``).
OWN_COMMANDS = frozenset(
    {"playback.ack", "response.cancel", "output_audio_buffer.clear", "session.event_ack"}
)
SPEECH_EVENTS = frozenset(
    {"input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"}
)


def _item(item: Any) -> None:
    if isinstance(item, dict) and item.get("status") == "cancelled":
        item["status"] = "incomplete"


def _response(resp: dict[str, Any]) -> None:
    for item in resp.get("output") or ():
        _item(item)
    metadata = resp.get("metadata")
    if isinstance(metadata, dict):
        strings = {
            str(k): v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
            for k, v in metadata.items()
        }
        resp["metadata"] = strings or None
    elif metadata is not None:
        resp["metadata"] = None
    details = resp.get("status_details")
    if not isinstance(details, dict):
        return
    reason = details.get("reason")
    if reason is not None and reason not in GA_REASONS:
        mapped = REASONS.get(str(reason))
        if mapped is None and resp.get("status") == "cancelled":
            mapped = "client_cancelled"
        details["reason"] = mapped
        if mapped is None:
            del details["reason"]
    if resp.get("status") == "failed":
        error = details.get("error")
        if not isinstance(error, dict):
            source = resp.get("error")
            message = source.get("message") if isinstance(source, dict) else None
            details["error"] = {"type": "server_error", "code": str(reason or "failed")}
            if isinstance(message, str):
                details["error"]["message"] = message


# OpenAI's words for a ``response.cancel`` with no response in progress. Clients match
# on them: LiveKit's agents drop an error whose message begins "Cancellation failed"
# (the cancel each barge-in sends races the answer's end), and log any other.
NO_ACTIVE_RESPONSE = "Cancellation failed: no active response found"
# vLLM-Omni's words for a cancel it cannot serve, with the response they name.
_CANCEL_REFUSALS = ("Response is not active: ", "Response is already complete: ")


def not_the_active(named: object) -> str:
    """The same refusal while another response is in progress: the cancel named one
    that is not (GA's prefix, as OpenAI begins each)."""
    return f"Cancellation failed: response {named!r} is not active"


def _error(ev: dict[str, Any], live: str | None) -> dict[str, Any]:
    error = ev.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if not isinstance(code, str) or code not in ERROR_CODES:
        return ev
    out = {**error, "code": ERROR_CODES[code]}  # type: ignore[dict-item]
    if code == "response_not_active":
        # Whether a response is in progress is the relay's to say (``live``): the
        # upstream's may have ended, or not yet begun, where the client's has not.
        message = str(out.get("message", ""))
        named = next((message[len(p) :] for p in _CANCEL_REFUSALS if message.startswith(p)), "")
        other = live is not None and named not in ("", live)
        out["message"] = not_the_active(named) if other else NO_ACTIVE_RESPONSE
    return {**ev, "error": out}


def translate(ev: dict[str, Any], live: str | None = None) -> dict[str, Any] | None:
    """The event as a GA client gets it (a copy), or None when a GA client must not;
    ``live``: the response in progress for the client, if any."""
    kind = ev.get("type")
    if kind in HANDLED or kind in ANSWERS:
        return ev
    if kind not in GA_SERVER_EVENTS or kind == "session.updated":
        # Non-GA extensions; and the upstream's session.updated, whose session object is
        # the upstream's: the proxy answers a GA client's session.update itself.
        return None
    if kind == "error":
        return _error(ev, live)
    if "item" not in ev and "response" not in ev and kind not in PATCHED:
        return ev  # nothing to change (audio deltas above all: no copy)
    out: dict[str, Any] = json.loads(json.dumps(ev))
    _item(out.get("item"))
    if isinstance(out.get("response"), dict):
        _response(out["response"])
    if kind == "conversation.item.input_audio_transcription.completed" and "usage" not in out:
        out["usage"] = {"type": "duration", "seconds": 0}
    if kind == "input_audio_buffer.speech_started" and not isinstance(out.get("item_id"), str):
        out["item_id"] = ""
    if kind == "output_audio_buffer.cleared" and not isinstance(out.get("response_id"), str):
        out["response_id"] = ""  # a clear with nothing playing: GA's type needs a string
    if kind in ITEM_ADDED and out.get("previous_item_id") == ROOT:
        out["previous_item_id"] = None
    return out


def own_error(ev: dict[str, Any]) -> NoteUpstreamError | None:
    """An upstream error that answers one of the proxy's own commands: kept from the
    client, noted for the edge; None for any other."""
    err = ev.get("error")
    if not isinstance(err, dict):
        return None
    event_id = err.get("event_id")
    if not (isinstance(event_id, str) and event_id.startswith(OWN_PREFIX)):
        return None
    code, message = err.get("code"), err.get("message")
    return NoteUpstreamError(
        code if isinstance(code, str) else None, message if isinstance(message, str) else None
    )
