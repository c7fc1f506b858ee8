"""A playback clock for ``talk``: what a listener would have heard, and when.

Each 20 ms tick plays 20 ms of the queued assistant audio (or silence) into a
time-aligned output track, so the written WAV lines up with the input. Positions are
reported as ``playback.ack`` (README.md: the proxy truncates at what was played), and a
barge-in flushes the queue at once, like a real client's speaker.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

ACK_EVERY_MS = 200


@dataclass
class Chunk:
    item_id: str
    response_id: str
    pcm: bytes
    offset: int = 0


@dataclass
class Player:
    rate: int = 24000
    queue: deque[Chunk] = field(default_factory=deque)
    played: dict[str, int] = field(default_factory=dict)  # item id -> bytes played
    heard: bytearray = field(default_factory=bytearray)
    received_bytes: int = 0
    _since_ack: int = 0

    def ms(self, nbytes: int) -> int:
        return nbytes * 1000 // (2 * self.rate)

    @property
    def queued_bytes(self) -> int:
        return sum(len(c.pcm) - c.offset for c in self.queue)

    @property
    def played_ms(self) -> int:
        return self.ms(sum(self.played.values()))

    def push(self, item_id: str, response_id: str, pcm: bytes) -> None:
        self.received_bytes += len(pcm)
        self.queue.append(Chunk(item_id, response_id, pcm))

    def _ack(self, chunk: Chunk) -> dict[str, Any]:
        self._since_ack = 0
        return {
            "type": "playback.ack",
            "item_id": chunk.item_id,
            "response_id": chunk.response_id,
            "played_ms": self.ms(self.played.get(chunk.item_id, 0)),
        }

    def tick(self, ms: int) -> list[dict[str, Any]]:
        """Play ``ms`` of audio; the acks to send."""
        want = self.rate * 2 * ms // 1000
        acks: list[dict[str, Any]] = []
        while want > 0 and self.queue:
            chunk = self.queue[0]
            take = min(want, len(chunk.pcm) - chunk.offset)
            self.heard += chunk.pcm[chunk.offset : chunk.offset + take]
            chunk.offset += take
            want -= take
            self.played[chunk.item_id] = self.played.get(chunk.item_id, 0) + take
            self._since_ack += take
            if chunk.offset >= len(chunk.pcm):
                self.queue.popleft()
                if not self.queue or self.queue[0].item_id != chunk.item_id:
                    acks.append(self._ack(chunk))
            elif self.ms(self._since_ack) >= ACK_EVERY_MS:
                acks.append(self._ack(chunk))
        self.heard += b"\0" * want
        return acks

    def last(self, ms: int) -> bytes:
        """The last ``ms`` played (for a real speaker)."""
        return bytes(self.heard[-(self.rate * 2 * ms // 1000) :])

    def flush(self) -> tuple[dict[str, Any] | None, int]:
        """Drop everything queued: the ack of the item cut, and how many ms were dropped."""
        if not self.queue:
            return None, 0
        head, dropped = self.queue[0], self.ms(self.queued_bytes)
        self.queue.clear()
        return self._ack(head), dropped
