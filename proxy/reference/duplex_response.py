"""One spoken response of the stand-in model and every event it puts on the wire.

Event names, field order and ids follow the projection in
``engine/duplex/realtime_events.py``: ``resp-<session>-<epoch>-<8hex>``,
item ``item_<response_id>``, every ``response.output_audio.delta`` (field
``delta``, ``format``, ``sample_rate_hz``, ``metadata`` with the cumulative
``audio_duration_ms`` and ``audio_text_marks``) followed by a
``response.output_audio_transcript.delta`` (possibly ``""``), and the terminal
sequence audio.done -> transcript.done -> content_part.done -> output_item.done
-> conversation.item.done -> response.done -> rate_limits.updated.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from proxy.reference.conversation import Conversation, truncate_audio_part
from proxy.reference.voice import ReplyChunk, ReplyPlan
from shim.audio import b64encode

Emit = Callable[[str, dict[str, object]], None]


class Playback:
    __slots__ = ("committed_ms", "generated_ms", "played_ms", "sent_ms")

    def __init__(self) -> None:
        self.generated_ms = 0
        self.sent_ms = 0
        self.played_ms = 0
        self.committed_ms = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "generated_ms": self.generated_ms,
            "sent_ms": self.sent_ms,
            "played_ms": self.played_ms,
            "committed_ms": self.committed_ms,
        }


class Response:
    __slots__ = (
        "_audio_done",
        "_conversation",
        "_emit",
        "acked",
        "chunks_sent",
        "cleared",
        "done",
        "epoch",
        "id",
        "item",
        "item_id",
        "marks",
        "modalities",
        "plan",
        "playback",
        "session_id",
        "status",
        "superseded",
        "transcript",
        "turn_id",
    )

    def __init__(
        self,
        *,
        session_id: str,
        epoch: int,
        turn_id: int,
        plan: ReplyPlan,
        modalities: list[object],
        emit: Emit,
        conversation: Conversation,
    ) -> None:
        self.session_id = session_id
        self.epoch = epoch
        self.turn_id = turn_id
        self.plan = plan
        self.modalities = modalities
        self._emit = emit
        self._conversation = conversation
        self.id = f"resp-{session_id}-{epoch}-{secrets.token_hex(4)}"
        self.item_id = f"item_{self.id}"
        self.item: dict[str, object] = {
            "id": self.item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        self.playback = Playback()
        self.chunks_sent = 0
        self.transcript = ""
        self.marks: list[dict[str, int]] = []
        self.status = "in_progress"
        self.done = False
        #: Its playback was stopped (cancel, barge-in, clear): it no longer owns the turn.
        self.cleared = False
        #: A later user input was committed: acks for it are ``playback_ack_too_late``.
        self.superseded = False
        #: An ack reserved its place in the history: later acks are never too late
        #: (``engine_session.py``, ``playback_ack_is_too_late``).
        self.acked = False
        self._audio_done = False

    @property
    def finished_streaming(self) -> bool:
        return self.chunks_sent >= len(self.plan.chunks)

    def _ids(self) -> dict[str, object]:
        return {
            "response_id": self.id,
            "item_id": self.item_id,
            "output_index": 0,
            "content_index": 0,
        }

    def start(self) -> None:
        internal = {
            "type": "response.created",
            "session_id": self.session_id,
            "epoch": self.epoch,
            "response_id": self.id,
            "turn_id": self.turn_id,
            "modalities": self.modalities,
        }
        self._emit(
            "response.created",
            {
                "response": {
                    "id": self.id,
                    "object": "realtime.response",
                    "status": "in_progress",
                    "status_details": None,
                    "output": [],
                    "modalities": self.modalities,
                    "metadata": {"duplex_event": internal},
                },
                "response_id": self.id,
            },
        )
        previous = self._conversation.add(self.item)
        self._emit("conversation.item.added", {"previous_item_id": previous, "item": self.item})
        self._emit("conversation.item.created", {"previous_item_id": previous, "item": self.item})
        self._emit(
            "response.output_item.added",
            {"response_id": self.id, "output_index": 0, "item": self.item},
        )
        self._emit(
            "response.content_part.added",
            {**self._ids(), "part": {"type": "audio", "transcript": ""}},
        )
        self._emit("response.speak", {**self._ids(), "metadata": self._speak_metadata()})

    def _speak_metadata(self) -> dict[str, object]:
        return {"session_id": self.session_id, "epoch": self.epoch, "model_speak": True}

    def send_chunk(self, chunk: ReplyChunk) -> None:
        """Emit the next audio delta and its paired transcript delta."""
        self.chunks_sent += 1
        last = self.finished_streaming
        self.playback.generated_ms = self.playback.sent_ms = chunk.end_ms
        self.transcript += chunk.text
        mark = {"text_chars": chunk.text_chars, "audio_end_ms": chunk.end_ms}
        self.marks.append(mark)
        metadata: dict[str, object] = {
            **self._speak_metadata(),
            "end_of_turn": last,
            "playback": self.playback.as_dict(),
            "audio_duration_ms": chunk.end_ms,
            "audio_text_marks": [mark],
        }
        self._emit(
            "response.output_audio.delta",
            {
                **self._ids(),
                "delta": b64encode(chunk.pcm16),
                "format": "pcm16",
                "sample_rate_hz": self.plan.rate_hz,
                "metadata": metadata,
            },
        )
        self._emit("response.output_audio_transcript.delta", {**self._ids(), "delta": chunk.text})
        self._refresh_item()
        if last and not self.done:
            internal = {
                "type": "response.output_audio.delta",
                "session_id": self.session_id,
                "epoch": self.epoch,
                "response_id": self.id,
                "end_of_turn": True,
                "finish_reason": "stop",
            }
            self._finish("completed", {"type": "completed", "reason": "stop"}, internal)

    def cancel(self, reason: str, *, new_epoch: int) -> None:
        """End it as cancelled; the item keeps what the client acked as heard."""
        committed = self.playback.committed_ms
        truncate_audio_part(self._refresh_item(), 0, committed)
        self.cleared = True
        internal = {
            "type": "audio.cancelled",
            "session_id": self.session_id,
            "response_id": self.id,
            "reason": reason,
            "cancelled_epoch": self.epoch,
            "epoch": new_epoch,
            "committed_ms": committed,
            "playback": self.playback.as_dict(),
        }
        self._finish("cancelled", {"type": "cancelled", "reason": reason}, internal)

    def _refresh_item(self) -> dict[str, object]:
        part: dict[str, object] = {"type": "output_audio", "transcript": self.transcript}
        part["audio_duration_ms"] = self.playback.sent_ms
        if self.marks:
            part["audio_text_marks"] = [dict(mark) for mark in self.marks]
        self.item["content"] = [part]
        return self.item

    def _finish(self, status: str, details: dict[str, object], internal: dict[str, object]) -> None:
        self.done = True
        self.status = status
        if self.chunks_sent and not self._audio_done:
            self._audio_done = True
            self._emit("response.output_audio.done", self._ids())
            if self.transcript:
                self._emit(
                    "response.output_audio_transcript.done",
                    {**self._ids(), "transcript": self.transcript},
                )
        self._emit(
            "response.content_part.done",
            {**self._ids(), "part": {"type": "audio", "transcript": self.transcript}},
        )
        self.item["status"] = status
        self._emit(
            "response.output_item.done",
            {"response_id": self.id, "output_index": 0, "item": self.item},
        )
        self._emit(
            "conversation.item.done",
            {"previous_item_id": self._conversation.previous_of(self.item_id), "item": self.item},
        )
        self._emit(
            "response.done",
            {
                "response": {
                    "id": self.id,
                    "object": "realtime.response",
                    "status": status,
                    "status_details": details,
                    "output": [self.item],
                    "metadata": internal,
                },
                "response_id": self.id,
            },
        )
        self._emit("rate_limits.updated", {"rate_limits": []})
