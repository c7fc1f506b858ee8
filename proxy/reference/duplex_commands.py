"""Client events of a live duplex session -> the session and its model.

``translate_realtime_command`` rejections (unknown type, missing fields, bad
audio, bad formats) raise :class:`CommandError`: the transport sends them
straight back, unjournaled, with the client's ``event_id``.  Everything that
gets past translation runs on the session and reports through the journal.
"""

from __future__ import annotations

import uuid

from proxy.reference import duplex_controls as controls
from proxy.reference import personaplex_append
from proxy.reference.duplex_formats import OUTPUT_FORMATS, parse_format
from proxy.reference.duplex_input import CommandError
from proxy.reference.duplex_session import DuplexSession
from proxy.reference.duplex_turn_detection import validate_session_object
from proxy.reference.model_profiles import PERSONAPLEX_RATE_ERROR
from proxy.reference.options import KIND_DUPLEX
from shim.realtime_items import image_refusal, normalized

_CLOSE = frozenset({"session.close", "close", "close_session"})
_TEXT_APPEND = frozenset({"input.text.append", "input_text.append", "push_text"})


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def dispatch(session: DuplexSession, event: dict[str, object]) -> None:
    """Run one client event (a JSON object with a string ``type``) on ``session``."""
    kind = str(event["type"])
    event_id = event.get("event_id")
    model = session.model
    if kind == "session.update":
        raw = event.get("session")
        patch = dict(raw) if isinstance(raw, dict) else dict(event)
        if isinstance(raw, dict):
            # Quirk: the envelope folds the append defaults in *before* validating.
            session.defaults.fold(raw)
        rejection = validate_session_object(patch)
        if rejection is not None:
            raise CommandError(rejection[0], rejection[1], param=rejection[2])
        session.update_settings(patch, event_id)
    elif kind == "input_audio_buffer.append":
        _append(session, event)
    elif kind in {"input_audio_buffer.commit", "input.commit"}:
        create = event.get("response_create", event.get("create_response"))
        if not isinstance(create, bool):
            create = True if kind == "input.commit" else None
        model.on_commit(create, event_id)
    elif kind == "input_audio_buffer.clear":
        model.on_clear_input()
    elif kind == "output_audio_buffer.clear":
        controls.clear_output(model, _str_or_none(event.get("response_id")))
    elif kind == "response.cancel":
        controls.cancel_response(model, _str_or_none(event.get("response_id")), event_id)
    elif kind == "response.create":
        _response_create(session, event, event_id)
    elif kind in {"playback.ack", "audio.playback_ack"}:
        _playback_ack(session, event)
    elif kind == "conversation.item.truncate":
        _truncate(session, event, event_id)
    elif kind == "conversation.item.create":
        _item_create(session, event)
    elif kind in {"conversation.item.delete", "conversation.item.retrieve"}:
        _item_lookup(session, kind, event, event_id)
    elif kind == "session.heartbeat":
        session.emit("session.heartbeat_ack", {"session_id": session.id})
    elif kind in _CLOSE:
        session.close(_str_or_none(event.get("reason")) or "client_close")
    elif kind in _TEXT_APPEND:
        if not isinstance(event.get("text"), str):
            raise CommandError("bad_event", "input.text.append requires text")
        session.emit_error(
            "native_text_append_unsupported",
            "The selected native duplex runtime accepts audio append only",
            event_id=event_id,
        )
    elif kind == "input.cancel":
        controls.cancel_input(model)
    elif kind == "barge_in":
        _barge_in(session)
    elif kind in {"turn.signal", "signal_turn"}:
        _turn_signal(session, event)
    else:
        raise CommandError("unknown_event", f"Unknown duplex event type: {kind}")


def _append(session: DuplexSession, event: dict[str, object]) -> None:
    if session.frames is not None:
        personaplex_append.append(session, event, session.frames)
        return
    profile = session.options.model_profile
    decoded = session.decoder.decode(event, session.defaults, f32_rate_hz=profile.f32_rate_hz)
    if not profile.accepts_converted_pcm and not decoded.native_float:
        # The envelope turned PCM16/G.711 into 16 kHz float, which the model refuses
        # from its append path (runner.py reports the ValueError as bad_event).
        session.emit_error("bad_event", PERSONAPLEX_RATE_ERROR)
        return
    session.model.on_append(decoded)


def _barge_in(session: DuplexSession) -> None:
    if session.kind != KIND_DUPLEX:
        session.emit_error("barge_in_unsupported", "Barge-in is not supported by this duplex model")
        return
    controls.cancel_input(session.model)


def _response_create(session: DuplexSession, event: dict[str, object], event_id: object) -> None:
    response = event.get("response")
    options = dict(response) if isinstance(response, dict) else {}
    declared = options.get("output_audio_format") or options.get("response_format")
    audio = options.get("audio")
    if declared is None and isinstance(audio, dict) and isinstance(audio.get("output"), dict):
        declared = audio["output"].get("format")
    parsed, _ = parse_format(declared)
    if declared is not None and not (isinstance(parsed, str) and parsed.lower() in OUTPUT_FORMATS):
        raise CommandError(
            "unsupported_audio_format", f"Unsupported output_audio_format: {declared}"
        )
    controls.create_response(session.model, options, event_id)


def _playback_ack(session: DuplexSession, event: dict[str, object]) -> None:
    played = event.get("played_ms")
    if not _number(played):
        raise CommandError("bad_event", "playback.ack requires numeric played_ms")
    committed = event.get("committed_ms")
    # A wire ``truncate`` is ignored: translate does not copy it (quirk 12).
    controls.acknowledge(
        session.model,
        int(played),  # type: ignore[call-overload]
        int(committed) if _number(committed) else None,  # type: ignore[call-overload]
        _str_or_none(event.get("response_id")),
        _str_or_none(event.get("item_id")),
    )


def _truncate(session: DuplexSession, event: dict[str, object], event_id: object) -> None:
    item_id = _str_or_none(event.get("item_id"))
    if item_id is None:
        raise CommandError("missing_item_id", "conversation.item.truncate requires item_id")
    end = event.get("audio_end_ms")
    if not _number(end):
        raise CommandError("bad_event", "conversation.item.truncate requires numeric audio_end_ms")
    index = event.get("content_index", 0)
    content_index = int(index) if _number(index) else 0  # type: ignore[call-overload]
    controls.truncate(session.model, item_id, int(end), content_index, event_id)  # type: ignore[call-overload]


def _item_create(session: DuplexSession, event: dict[str, object]) -> None:
    item = event.get("item")
    if not isinstance(item, dict):
        raise CommandError("bad_event", "conversation.item.create requires item")
    stored = dict(item)
    if not _str_or_none(stored.get("id")):
        stored["id"] = f"item_{uuid.uuid4().hex}"
    stored.setdefault("object", "realtime.item")
    stored["status"] = "completed"
    stored = normalized(stored)  # as vLLM-Omni takes it (shim/realtime_items.py)
    refusal = image_refusal(stored, images=False)  # no stand-in model takes images
    if refusal is not None:
        session.emit_error(*refusal)
        return
    conversation = session.model.conversation
    previous = _str_or_none(event.get("previous_item_id")) or conversation.last_id
    conversation.add(stored)
    if stored.get("role") == "user" and _has_content(stored["content"]):
        session.model.unanswered_items += 1  # a later response.create may answer it
    session.emit("conversation.item.added", {"previous_item_id": previous, "item": stored})
    session.emit("conversation.item.created", {"previous_item_id": previous, "item": stored})
    session.emit(
        "conversation.item.done",
        {"previous_item_id": conversation.previous_of(str(stored["id"])), "item": stored},
    )


def _has_content(content: list[object]) -> bool:
    """A message vLLM-Omni keeps in its history (``engine/duplex/config.py``,
    ``realtime_item_to_history_message``): some text, an image or audio."""
    parts = [p for p in content if isinstance(p, dict)]
    text = "".join(
        p["text"]
        for p in parts
        if p.get("type") in {"input_text", "text", "output_text", "audio_transcript", "transcript"}
        and isinstance(p.get("text"), str)
    )
    media = any(
        (p.get("type") == "input_image" and isinstance(p.get("image_url"), str))
        or (
            p.get("type") in {"input_audio", "audio"}
            and isinstance(p.get("audio") or p.get("data"), str)
            and bool(p.get("audio") or p.get("data"))
        )
        for p in parts
    )
    return bool(text.strip()) or media


def _item_lookup(
    session: DuplexSession, kind: str, event: dict[str, object], event_id: object
) -> None:
    item_id = _str_or_none(event.get("item_id"))
    conversation = session.model.conversation
    if kind == "conversation.item.delete":
        if item_id is None:
            raise CommandError("missing_item_id", "conversation.item.delete requires item_id")
        if not conversation.delete(item_id):
            session.emit_error(
                "item_not_found", f"Conversation item not found: {item_id}", event_id=event_id
            )
            return
        details = {
            "type": "conversation.item.deleted",
            "session_id": session.id,
            "item_id": item_id,
            "deleted": True,
        }
        session.emit("conversation.item.deleted", {"item_id": item_id, "event": details})
        return
    if item_id is None:
        session.emit_error(
            "missing_item_id", "conversation.item.retrieve requires item_id", event_id=event_id
        )
        return
    item = conversation.get(item_id)
    if item is None:
        session.emit_error(
            "item_not_found", f"Conversation item not found: {item_id}", event_id=event_id
        )
        return
    session.emit("conversation.item.retrieved", {"item": item})


def _turn_signal(session: DuplexSession, event: dict[str, object]) -> None:
    inner = _str_or_none(event.get("event"))
    if inner is None:
        raise CommandError("bad_event", "turn.signal requires event")
    raw = event.get("payload")
    payload = dict(raw) if isinstance(raw, dict) else {}
    if inner in {
        "input.cancel",
        "barge_in",
        "response.cancel",
        "session.update",
    } or inner.startswith("conversation.item."):
        forwarded: dict[str, object] = {**payload, "type": inner}
        if "event_id" in event:
            forwarded["event_id"] = event["event_id"]
        if inner == "session.update":
            forwarded = {"type": inner, "session": payload, "event_id": event.get("event_id")}
        dispatch(session, forwarded)
        return
    session.emit(
        "turn.event",
        {
            "session_id": session.id,
            "event": inner,
            "turn_state": session.model.turn_state,
            "epoch": session.model.epoch,
        },
    )
