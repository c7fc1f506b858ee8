"""Conversation items as the Realtime projection keeps them (``realtime_events.py``).

Insertion-ordered; ``previous_item_id`` of an *added* event is the last item
added before it, of a *done*/*committed* event the item that precedes it in
the list.  Items are mutable dicts: the assistant item is updated as its audio
streams and when it is truncated, and ``conversation.item.retrieve`` reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: Oldest items are forgotten beyond this many (a session can run for hours).
MAX_ITEMS = 256


class Conversation:
    __slots__ = ("_items", "last_id")

    def __init__(self) -> None:
        self._items: dict[str, dict[str, object]] = {}
        self.last_id: str | None = None

    def get(self, item_id: str) -> dict[str, object] | None:
        return self._items.get(item_id)

    def add(self, item: dict[str, object]) -> str | None:
        """Store a new item; returns the ``previous_item_id`` for its added/created events."""
        previous = self.last_id
        item_id = str(item["id"])
        self._items[item_id] = item
        self.last_id = item_id
        while len(self._items) > MAX_ITEMS:
            del self._items[next(iter(self._items))]
        return previous

    def previous_of(self, item_id: str) -> str | None:
        previous: str | None = None
        for known in self._items:
            if known == item_id:
                return previous
            previous = known
        return self.last_id

    def delete(self, item_id: str) -> bool:
        if self._items.pop(item_id, None) is None:
            return False
        if self.last_id == item_id:
            self.last_id = next(reversed(self._items)) if self._items else None
        return True


@dataclass(frozen=True, slots=True)
class UserCommit:
    session_id: str
    item_id: str
    transcript: str
    is_speech: bool
    turn_id: int
    epoch: int
    deferred: bool


def emit_user_commit(
    emit: Callable[[str, dict[str, object]], None], conversation: Conversation, commit: UserCommit
) -> None:
    """The commit sequence after ``speech_stopped``: item added, created,
    ``input_audio_buffer.committed`` (the internal ``input.committed`` under ``event``),
    the input transcription, item done."""
    part: dict[str, object] = {"type": "input_audio", "transcript": commit.transcript}
    if not commit.is_speech:
        part["is_speech"] = False
    item: dict[str, object] = {
        "id": commit.item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [part],
    }
    previous = conversation.add(item)
    emit("conversation.item.added", {"previous_item_id": previous, "item": item})
    emit("conversation.item.created", {"previous_item_id": previous, "item": item})
    details: dict[str, object] = {
        "type": "input.committed",
        "session_id": commit.session_id,
        "turn_id": commit.turn_id,
        "epoch": commit.epoch,
        "history_len": commit.turn_id,
        "native_audio": True,
        "message": {"role": "user", "content": [dict(part)]},
        "realtime_item_id": commit.item_id,
    }
    if commit.deferred:
        details["overlap_deferred"] = True
    if not commit.is_speech:
        details.update(empty=True, is_speech=False, no_response=True)
    emit(
        "input_audio_buffer.committed",
        {
            "previous_item_id": conversation.previous_of(commit.item_id),
            "item_id": commit.item_id,
            "event": details,
        },
    )
    if commit.transcript:
        emit(
            "conversation.item.input_audio_transcription.completed",
            {"item_id": commit.item_id, "content_index": 0, "transcript": commit.transcript},
        )
    emit(
        "conversation.item.done",
        {"previous_item_id": conversation.previous_of(commit.item_id), "item": item},
    )


def chars_for_audio_ms(
    audio_end_ms: int, text_len: int, marks: Sequence[Mapping[str, int]], final_ms: int
) -> int:
    """``items.py::text_chars_for_audio_ms_from_marks``: cut text where the audio was cut."""
    if text_len <= 0 or audio_end_ms <= 0:
        return 0
    previous_ms = previous_chars = 0
    for mark in sorted(marks, key=lambda m: m["audio_end_ms"]):
        mark_ms = max(previous_ms, mark["audio_end_ms"])
        mark_chars = max(previous_chars, min(text_len, mark["text_chars"]))
        if audio_end_ms <= mark_ms:
            if mark_ms <= previous_ms:
                return mark_chars
            ratio = (audio_end_ms - previous_ms) / max(1, mark_ms - previous_ms)
            return int(previous_chars + (mark_chars - previous_chars) * min(1.0, ratio))
        previous_ms, previous_chars = mark_ms, mark_chars
    if final_ms > previous_ms and audio_end_ms < final_ms:
        ratio = (audio_end_ms - previous_ms) / max(1, final_ms - previous_ms)
        return int(previous_chars + (text_len - previous_chars) * ratio)
    return text_len if audio_end_ms >= previous_ms else previous_chars


def truncate_audio_part(item: dict[str, object], content_index: int, audio_end_ms: int) -> None:
    """Cut an assistant audio part's transcript to what ``audio_end_ms`` of audio carried."""
    content = item.get("content")
    if not isinstance(content, list) or not 0 <= content_index < len(content):
        return
    part = content[content_index]
    if not isinstance(part, dict):
        return
    transcript = part.get("transcript")
    if not isinstance(transcript, str) or not transcript:
        return
    raw_marks = part.get("audio_text_marks")
    marks = [m for m in raw_marks if isinstance(m, dict)] if isinstance(raw_marks, list) else []
    duration = part.get("audio_duration_ms")
    final_ms = int(duration) if isinstance(duration, int | float) else 0
    keep = chars_for_audio_ms(audio_end_ms, len(transcript), marks, final_ms)
    part["transcript"] = transcript[:keep].rstrip()


def truncate_error(item: Mapping[str, object], content_index: int, audio_end_ms: int) -> str | None:
    """``items.py::validate_realtime_item_truncate`` messages."""
    if item.get("type") != "message" or item.get("role") != "assistant":
        return "conversation.item.truncate only supports assistant message items"
    if audio_end_ms < 0:
        return "conversation.item.truncate requires non-negative audio_end_ms"
    content = item.get("content")
    if not isinstance(content, list) or not content:
        return None
    if content_index >= len(content):
        return f"conversation.item.truncate content_index out of range: {content_index}"
    part = content[max(0, content_index)]
    if not isinstance(part, dict):
        return "conversation.item.truncate target content part is invalid"
    if part.get("type") not in {"audio", "output_audio"}:
        return "conversation.item.truncate target content part must be audio"
    duration = part.get("audio_duration_ms")
    if isinstance(duration, int | float) and audio_end_ms > int(duration):
        return "conversation.item.truncate audio_end_ms exceeds item audio duration"
    return None
