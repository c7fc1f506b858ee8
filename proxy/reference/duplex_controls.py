"""Client controls over the stand-in model's speech: cancel, clear, create, ack, truncate.

Semantics and messages follow the 0.30.0 runner and its playback ledger
(``session/runner.py::_on_cancel``, ``realtime_events.py::resolve_cancel_response``
/ ``resolve_clear_output_audio`` / ``resolve_truncate_item``,
``session/playback_ledger.py::apply_playback_ack``; ``docs/fidelity.md``).  All of
them report through the journal.
"""

from __future__ import annotations

import numpy as np

from proxy.reference.conversation import truncate_audio_part, truncate_error
from proxy.reference.duplex_model import DuplexModel
from proxy.reference.duplex_port import UserTurn
from proxy.reference.duplex_response import Response
from proxy.reference.options import FAULT_IGNORE_TRUNCATE

TEXT_TURN_REFUSED = "This duplex model answers speech input only."
TEXT_TURN_SEED = " Seed the session with initial_user_text to ask it in text."
_RESPONSE_OPTIONS = (
    "instructions",
    "voice",
    "temperature",
    "max_response_output_tokens",
    "max_output_tokens",
    "max_tokens",
    "tools",
    "tool_choice",
)


def _latest_id(model: DuplexModel) -> str | None:
    latest = model.response or model.last_response
    return latest.id if latest is not None else None


def cancel_response(model: DuplexModel, response_id: str | None, event_id: object) -> None:
    port = model.port
    target = response_id or _latest_id(model)
    known = model.responses.get(target) if target else None
    if known is not None and known.done:
        port.emit_error(
            "response_not_active", f"Response is already complete: {target}", event_id=event_id
        )
        return
    if response_id and model.response is not None and response_id != model.response.id:
        port.emit_error(
            "response_not_active", f"Response is not active: {response_id}", event_id=event_id
        )
        return
    if not model.owns_turn():
        if response_id:
            return  # naming a response when nothing is active is silently ignored
        port.emit_error(
            "response_not_active", "response.cancel requires an active response", event_id=event_id
        )
        return
    model.stop_assistant("client_cancelled")
    model.maybe_next()


def clear_output(model: DuplexModel, response_id: str | None) -> None:
    target = response_id or _latest_id(model)
    model.port.emit("output_audio_buffer.cleared", {"response_id": target})
    if model.response is not None and target == model.response.id:
        model.cancel_live("output_audio_buffer_clear")
    elif model.last_response is not None and target == model.last_response.id:
        model.last_response.cleared = True
    model.maybe_next()


def cancel_input(model: DuplexModel) -> None:
    """``input.cancel`` / client ``barge_in``: drop the input and cut the assistant."""
    model.reset_input()
    if not model.stop_assistant("barge_in"):
        # Nothing to cut still moves the epoch on and clears the playback cursor, a
        # finished answer's included, which frees the voice (vLLM-Omni
        # ``session/runner.py``, ``_cancel_pending_input``: ``advance_barge_in_epoch``).
        model.epoch += 1
        if model.last_response is not None:
            model.last_response.cleared = True
        model.port.emit("input_audio_buffer.cleared", {})


def create_response(model: DuplexModel, options: dict[str, object], event_id: object) -> None:
    port = model.port
    audio = options.get("audio")
    output = audio.get("output") if isinstance(audio, dict) else None
    nested_voice = output.get("voice") if isinstance(output, dict) else None
    if nested_voice is not None or any(options.get(k) is not None for k in _RESPONSE_OPTIONS):
        port.emit_error(
            "unsupported_native_response_options",
            "response.create options are not supported by a model-native duplex session",
            event_id=event_id,
        )
        return
    if model.owns_turn():
        port.emit_error(
            "response_already_active",
            "response.create cannot start while another response is active.",
        )
        return
    turn = model.take_waiting()
    items, model.unanswered_items = model.unanswered_items, 0
    profile = port.options.model_profile
    if turn is None and items and profile.text_only_turn:
        # A turn of text items: the model is given the conversation, and primed with
        # its silence (``session/runner.py``, ``_start_response_from_committed_audio``).
        turn = UserTurn(str(model.conversation.last_id), np.zeros(0, dtype=np.int16), 0)
    elif turn is None and items:
        seed = TEXT_TURN_SEED if profile.chat_completions else ""
        port.emit_error("text_only_turn_unsupported", TEXT_TURN_REFUSED + seed)
        return
    elif turn is None:
        port.emit_error(
            "response_create_without_input",
            "Duplex response.create requires committed audio to answer.",
        )
        return
    model.start_response(turn)


def _resolve_ack(
    model: DuplexModel, response_id: str | None, item_id: str | None, *, truncate: bool
) -> tuple[Response | None, str | None] | None:
    """The response an ack is about, or None after reporting why it has none."""
    port = model.port
    if item_id is None and response_id is not None:
        item_id = f"item_{response_id}"
    elif response_id is None and item_id is not None and item_id.startswith("item_"):
        response_id = item_id.removeprefix("item_")
    if response_id is None and item_id is None:
        latest = model.response or model.last_response
        if latest is not None:
            response_id, item_id = latest.id, latest.item_id
    if response_id is None:
        if item_id is not None:
            port.emit_error(
                "playback_item_not_found", "playback.ack requires a response-owned assistant item."
            )
            return None
        return None, None
    if item_id != f"item_{response_id}":
        port.emit_error(
            "playback_item_mismatch", "playback.ack item_id must match item_<response_id>."
        )
        return None
    response = model.responses.get(response_id)
    if response is None:
        port.emit_error(
            "playback_item_not_found",
            f"No assistant response item is registered for {response_id}.",
        )
        return None
    if response.superseded and not truncate and not response.acked:
        port.emit_error(
            "playback_ack_too_late", "playback.ack arrived after a later user input was committed."
        )
        return None
    return response, item_id


def acknowledge(
    model: DuplexModel,
    played_ms: int,
    committed_ms: int | None,
    response_id: str | None,
    item_id: str | None,
    *,
    truncate: bool = False,
) -> None:
    """``playback.ack``: move the played/committed cursors; acks decide turn ownership."""
    resolved = _resolve_ack(model, response_id, item_id, truncate=truncate)
    if resolved is None:
        return
    response, item_id = resolved
    committed = played_ms if committed_ms is None else committed_ms
    model.acks_seen = True
    if response is not None:
        response.acked = True
        playback = response.playback
        playback.played_ms = max(playback.played_ms, played_ms)
        playback.committed_ms = committed if truncate else max(playback.committed_ms, committed)
    model.port.emit(
        "playback.acknowledged",
        {
            "event": {
                "type": "playback.acknowledged",
                "session_id": model.port.id,
                "epoch": model.epoch,
                "item_id": item_id,
                "played_ms": played_ms,
                "committed_ms": committed,
                "truncate": truncate,
                "playback": response.playback.as_dict() if response else model.playback,
                "history_committed": response is not None,
            }
        },
    )
    if model.response is None and model.turn_state == "assistant_playing" and not model.owns_turn():
        model.turn_state = "idle"
    model.maybe_next()


def truncate(
    model: DuplexModel, item_id: str, audio_end_ms: int, content_index: int, event_id: object
) -> None:
    """``conversation.item.truncate``: cut the item, then a hard playback ack to that point."""
    port = model.port
    item = model.conversation.get(item_id)
    if item is None:
        port.emit_error(
            "item_not_found", f"Conversation item not found: {item_id}", event_id=event_id
        )
        return
    error = truncate_error(item, content_index, audio_end_ms)
    if error is not None:
        port.emit_error("bad_event", error, event_id=event_id)
        return
    if not port.options.has(FAULT_IGNORE_TRUNCATE):
        truncate_audio_part(item, content_index, audio_end_ms)
    port.emit(
        "conversation.item.truncated",
        {
            "item_id": item_id,
            "content_index": content_index,
            "audio_end_ms": audio_end_ms,
            "event": {
                "type": "conversation.item.truncated",
                "session_id": port.id,
                "item_id": item_id,
                "content_index": content_index,
                "audio_end_ms": audio_end_ms,
                "truncated": True,
            },
        },
    )
    acknowledge(model, audio_end_ms, audio_end_ms, None, item_id, truncate=True)
