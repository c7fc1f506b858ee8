"""The playback ledger: what assistant audio was sent, and how much was heard.

The played position comes from the client's ``playback.ack`` when it sends them,
else it is estimated as ``min(wall time since the first delta was sent, audio
duration sent)`` (``docs/architecture.md``, barge-in). ``audio_end_ms`` is an
integer never beyond the audio sent.
The transcript kept for the conversation is cut to what was heard: by the upstream's
own text marks where it gives them, else by where each text delta arrived in the
audio stream, else by time share.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass
class ItemPlayback:
    item_id: str
    response_id: str
    rate_hz: int
    sent_samples: int = 0
    first_sent_ms: float | None = None
    # Wall time at which the client runs out of this item's audio, if it plays each
    # delta as soon as it has it (a virtual playhead).
    play_end_ms: float = 0.0
    acked_ms: float | None = None
    transcript: str = ""
    # (audio ms sent when this much text had arrived, cumulative characters)
    marks: list[tuple[float, int]] = field(default_factory=list)
    finished: bool = False  # the response produced all its audio
    truncated_ms: int | None = None
    # Who told the client where the item ends (``conversation.item.truncated``):
    # "proxy" (a barge-in), "client" (its own truncate), None (nobody: not cut, or
    # cut only in the proxy's books, as a client's ``response.cancel`` leaves it).
    told_by: str | None = None
    # Where its playback ends at the listener, carried by a move to another replica
    # (``shim/played_snapshot.py``) that takes the item as heard for all else.
    restored_end_ms: float | None = None

    @property
    def sent_ms(self) -> float:
        return self.sent_samples * 1000.0 / self.rate_hz

    def add_audio(self, n_samples: int, now_ms: float) -> float:
        """Record a delta sent at ``now_ms``; returns when it starts playing."""
        if self.first_sent_ms is None:
            self.first_sent_ms = now_ms
        start = max(self.play_end_ms, now_ms)
        self.play_end_ms = start + n_samples * 1000.0 / self.rate_hz
        self.sent_samples += n_samples
        return start

    def add_text(self, delta: str) -> None:
        if not delta:
            return
        self.transcript += delta
        self.marks.append((self.sent_ms, len(self.transcript)))

    def ack(self, played_ms: float) -> None:
        if played_ms >= 0:
            self.acked_ms = max(self.acked_ms or 0.0, float(played_ms))

    def played_ms(self, now_ms: float) -> float:
        """Best estimate of how much of this item the listener has heard."""
        if self.truncated_ms is not None:
            return float(self.truncated_ms)
        if self.acked_ms is not None:
            return min(self.acked_ms, self.sent_ms)
        if self.first_sent_ms is None:
            return 0.0
        # min(wall time since the first delta, audio sent), generalised to pauses in
        # sending: whatever is still queued at the client has not been heard yet.
        queued = max(0.0, self.play_end_ms - now_ms)
        return max(0.0, min(now_ms - self.first_sent_ms, self.sent_ms - queued))

    def playing(self, now_ms: float, margin_ms: float = 0.0) -> bool:
        """True while sent audio is (estimated to be) still coming out of the speaker."""
        if self.truncated_ms is not None or self.sent_samples == 0:
            return False
        return self.played_ms(now_ms) + margin_ms < self.sent_ms

    def played_out(self, now_ms: float) -> bool:
        """Whether this item's audio has ended at the listener, for what runs from that
        end (GA's idle timeout: ``response.done`` plus the playback's duration): when
        the clock estimate passes its end or the client's acks reach it, whichever is
        first. Acks come in whole ms (1000 of 1000.5 is all of it), and a client that
        stops acking mid-answer does not hold the answer playing for good.
        ``playing`` stays the client's word where it acks (barge-in, truncation)."""
        if self.truncated_ms is not None or self.sent_samples == 0:
            return True
        if self.acked_ms is not None and self.acked_ms >= int(self.sent_ms):
            return True
        return now_ms >= max(self.play_end_ms, self.restored_end_ms or self.play_end_ms)

    def audio_end_ms(self, now_ms: float) -> int:
        """Integer position to truncate at: floor, so never beyond the audio sent."""
        return int(min(self.played_ms(now_ms), self.sent_ms))

    def heard_transcript(self, played_ms: float) -> str:
        """The part of the transcript the listener heard, cut at a word boundary."""
        text = self.transcript
        if not text or played_ms >= self.sent_ms:
            return text
        if played_ms <= 0:
            return ""
        spread = len({round(m[0]) for m in self.marks}) > 1
        if spread:
            positions = [m[0] for m in self.marks]
            idx = bisect.bisect_right(positions, played_ms)
            chars = self.marks[idx - 1][1] if idx else 0
        else:
            # Text arrived in one burst: estimate by time share.
            chars = int(len(text) * played_ms / max(self.sent_ms, 1.0))
        cut = text[:chars]
        if chars < len(text) and cut and not text[chars].isspace():
            space = cut.rfind(" ")
            cut = cut[:space] if space > 0 else cut
        return cut.rstrip()


class PlaybackLedger:
    """Assistant items by id, newest last; bounded to the most recent ones."""

    def __init__(self, max_items: int = 64) -> None:
        self._items: dict[str, ItemPlayback] = {}
        self._max = max_items

    def start(self, item_id: str, response_id: str, rate_hz: int) -> ItemPlayback:
        item = ItemPlayback(item_id=item_id, response_id=response_id, rate_hz=rate_hz)
        self._items[item_id] = item
        while len(self._items) > self._max:
            self._items.pop(next(iter(self._items)))
        return item

    def get(self, item_id: str) -> ItemPlayback | None:
        return self._items.get(item_id)

    def forget(self, item_id: str) -> None:
        """The item left the conversation (``conversation.item.deleted``)."""
        self._items.pop(item_id, None)

    def latest(self) -> ItemPlayback | None:
        return next(reversed(self._items.values()), None) if self._items else None

    def playing(self, now_ms: float) -> ItemPlayback | None:
        """The item whose audio is still being played out, if any."""
        item = self.latest()
        if item is not None and item.playing(now_ms):
            return item
        return None

    def sounding(self, now_ms: float) -> ItemPlayback | None:
        """The item whose audio has not yet ended at the listener (``played_out``)."""
        item = self.latest()
        return item if item is not None and not item.played_out(now_ms) else None

    def items(self) -> list[ItemPlayback]:
        return list(self._items.values())
