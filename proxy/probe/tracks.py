"""Follow the assistant's responses through either dialect: ids, audio, text, how each ended.

Realtime dialect (OpenAI GA and vLLM-Omni duplex): ``response.created``
opens a response; ``response.output_audio.delta`` carries base64 PCM16 in ``delta``
with ``response_id``/``item_id`` (and, from vLLM-Omni, ``sample_rate_hz`` and
``metadata.audio_text_marks``); ``response.done`` ends it with a status.

Turn-based dialect (vLLM-Omni without a duplex adapter): no ids at all;
``transcription.delta`` and ``response.output_audio.delta{audio, sample_rate_hz}``
belong to the generation in progress, which ``response.output_audio.done`` ends.
Those generations get synthetic ids ``turn-1``, ``turn-2``...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

AUDIO_DELTAS = frozenset({"response.output_audio.delta", "response.audio.delta"})
TEXT_DELTAS = frozenset(
    {
        "response.output_audio_transcript.delta",
        "response.audio_transcript.delta",
        "response.output_text.delta",
        "response.text.delta",
    }
)
TEXT_DONE = frozenset({"response.output_audio_transcript.done", "response.audio_transcript.done"})
DEFAULT_OUTPUT_RATE = 24000
#: Where the client keeps the decoded size of an audio payload it dropped.
AUDIO_BYTES = "_probe_audio_bytes"


def b64_size(data: str) -> int:
    """Decoded size of a base64 string, without decoding it."""
    n = len(data)
    return n * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0)


def item_transcript(item: object) -> str | None:
    """The text an item carries (assistant audio transcript or text parts), if any."""
    if not isinstance(item, dict):
        return None
    content = item.get("content")
    if not isinstance(content, list):
        return None
    texts = [
        part.get("transcript") if isinstance(part.get("transcript"), str) else part.get("text")
        for part in content
        if isinstance(part, dict)
    ]
    found = [t for t in texts if isinstance(t, str)]
    return "".join(found) if found else None


@dataclass(slots=True)
class ResponseTrack:
    id: str
    index: int
    created_t: float | None = None
    item_id: str | None = None
    first_audio_t: float | None = None
    last_audio_t: float | None = None
    audio_ms: float = 0.0
    deltas: int = 0
    max_delta_ms: float = 0.0
    transcript: str = ""
    max_text_delta: int = 0
    #: (audio_end_ms, text_chars) pairs the endpoint published (vLLM-Omni metadata).
    marks: list[tuple[int, int]] = field(default_factory=list)
    done_t: float | None = None
    done_count: int = 0
    status: str | None = None
    reason: str | None = None
    done_transcript: str | None = None
    deltas_after_done: int = 0
    audio_after_done_ms: float = 0.0
    #: (arrival time, cumulative audio ms) of every delta.
    audio_log: list[tuple[float, float]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.done_count > 0

    def audio_ms_at(self, t: float) -> float:
        """Audio received up to time ``t``."""
        received = 0.0
        for at, cumulative in self.audio_log:
            if at > t:
                break
            received = cumulative
        return received

    def playing_until(self) -> float | None:
        """When a client that plays every delta in real time, from its arrival, is done."""
        end: float | None = None
        before = 0.0
        for at, cumulative in self.audio_log:
            end = max(at, end or at) + (cumulative - before) / 1000.0
            before = cumulative
        return end

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "audio_ms": round(self.audio_ms),
            "deltas": self.deltas,
            "status": self.status,
            "reason": self.reason,
            "transcript_chars": len(self.transcript),
        }


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class Tracker:
    """Turns received events into ``ResponseTrack``s, in arrival order."""

    def __init__(self, dialect: str, output_rate: int = DEFAULT_OUTPUT_RATE) -> None:
        self.dialect = dialect
        self.output_rate = output_rate
        self.responses: dict[str, ResponseTrack] = {}
        self.order: list[str] = []
        self._current: str | None = None
        self._turns = 0

    def get(self, response_id: str) -> ResponseTrack:
        track = self.responses.get(response_id)
        if track is None:
            track = ResponseTrack(id=response_id, index=len(self.order))
            self.responses[response_id] = track
            self.order.append(response_id)
        return track

    def tracks(self, since: int = 0) -> list[ResponseTrack]:
        return [self.responses[rid] for rid in self.order[since:]]

    def feed(self, t: float, kind: str, event: dict[str, Any]) -> None:
        if self.dialect == "turn":
            self._feed_turn(t, kind, event)
        else:
            self._feed_realtime(t, kind, event)

    # ---- realtime dialect ----

    def _rid(self, event: dict[str, Any]) -> str:
        rid = _str(event.get("response_id"))
        response = event.get("response")
        if rid is None and isinstance(response, dict):
            rid = _str(response.get("id"))
        return rid or self._current or "response"

    def _feed_realtime(self, t: float, kind: str, event: dict[str, Any]) -> None:
        if kind == "response.created":
            rid = self._rid(event)
            self._current = rid
            self.get(rid).created_t = t
        elif kind in AUDIO_DELTAS:
            self._audio(t, self.get(self._rid(event)), event)
        elif kind in TEXT_DELTAS:
            self._text(self.get(self._rid(event)), event.get("delta"))
        elif kind in TEXT_DONE:
            track = self.get(self._rid(event))
            text = event.get("transcript")
            if isinstance(text, str) and track.done_transcript is None:
                track.done_transcript = text
        elif kind == "response.output_item.added":
            item = event.get("item")
            if isinstance(item, dict):
                self.get(self._rid(event)).item_id = _str(item.get("id"))
        elif kind == "response.done":
            self._done(t, self.get(self._rid(event)), event)

    def _done(self, t: float, track: ResponseTrack, event: dict[str, Any]) -> None:
        track.done_count += 1
        if track.done_t is not None:
            return
        track.done_t = t
        response = event.get("response")
        response = response if isinstance(response, dict) else {}
        status = response.get("status")
        track.status = status if isinstance(status, str) else None
        details = response.get("status_details")
        if isinstance(details, dict) and isinstance(details.get("reason"), str):
            track.reason = details["reason"]
        output = response.get("output")
        if isinstance(output, list):
            texts = [item_transcript(item) for item in output]
            found = [text for text in texts if text is not None]
            if found:
                track.done_transcript = "".join(found)

    def _audio(self, t: float, track: ResponseTrack, event: dict[str, Any]) -> None:
        size = event.get(AUDIO_BYTES)
        if not isinstance(size, int):
            payload = event.get("delta") or event.get("audio")
            if not isinstance(payload, str):
                return
            size = b64_size(payload)
        rate = event.get("sample_rate_hz")
        rate = rate if isinstance(rate, int) and rate > 0 else self.output_rate
        ms = size / 2 * 1000.0 / rate
        if track.finished:
            track.deltas_after_done += 1
            track.audio_after_done_ms += ms
        if track.first_audio_t is None:
            track.first_audio_t = t
        track.last_audio_t = t
        track.audio_ms += ms
        track.deltas += 1
        track.max_delta_ms = max(track.max_delta_ms, ms)
        track.audio_log.append((t, track.audio_ms))
        item_id = _str(event.get("item_id"))
        if item_id is not None:
            track.item_id = item_id
        metadata = event.get("metadata")
        marks = metadata.get("audio_text_marks") if isinstance(metadata, dict) else None
        for mark in marks if isinstance(marks, list) else []:
            if isinstance(mark, dict):
                end, chars = mark.get("audio_end_ms"), mark.get("text_chars")
                if isinstance(end, int | float) and isinstance(chars, int):
                    track.marks.append((int(end), chars))

    @staticmethod
    def _text(track: ResponseTrack, delta: object) -> None:
        if isinstance(delta, str):
            track.transcript += delta
            track.max_text_delta = max(track.max_text_delta, len(delta))

    # ---- turn-based dialect ----

    def _turn(self) -> ResponseTrack:
        current = self.responses.get(self._current) if self._current else None
        if current is None or current.finished:
            self._turns += 1
            self._current = f"turn-{self._turns}"
            current = self.get(self._current)
        return current

    def _feed_turn(self, t: float, kind: str, event: dict[str, Any]) -> None:
        if kind == "response.output_audio.delta":
            track = self._turn()
            if track.created_t is None:
                track.created_t = t
            self._audio(t, track, event)
        elif kind == "transcription.delta":
            track = self._turn()
            if track.created_t is None:
                track.created_t = t
            self._text(track, event.get("delta"))
        elif kind == "transcription.done":
            text = event.get("text")
            if isinstance(text, str):
                self._turn().done_transcript = text
        elif kind == "response.output_audio.done":
            track = self._turn()
            track.done_count += 1
            track.done_t = t
            track.status = "completed"
