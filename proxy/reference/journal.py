"""The per-session replay journal (vLLM-Omni ``session_attachment.py::DuplexEventJournal``).

Every journaled event gets ``server_event_seq`` appended as its *last* key,
starting at 1.  Entries are kept as the exact text that went on the wire so a
replay is byte-identical.  Bounds: a TTL (pruned on every record and replay,
advancing the gap boundary) and a byte cap measured on the compact UTF-8 JSON;
the first event that would exceed the cap marks the journal overflowed for
good.  ``acknowledge(n)`` drops entries <= n and moves the boundary to n, so a
later resume from behind it is a gap.  Time is passed in by the caller.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from proxy.reference.wire import dumps


class JournalGap(Exception):
    """The journal cannot bridge the client's gap (or it overflowed)."""


class JournalOverflow(Exception):
    """This event would exceed the byte cap; the journal is now permanently overflowed."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    created: float
    size: int
    text: str


class EventJournal:
    __slots__ = (
        "_bytes",
        "_dropped_through",
        "_entries",
        "_max_bytes",
        "_next",
        "_ttl_s",
        "overflowed",
    )

    def __init__(self, *, max_bytes: int, ttl_s: float) -> None:
        self._max_bytes = max_bytes
        self._ttl_s = ttl_s
        self._entries: deque[JournalEntry] = deque()
        self._next = 1
        self._dropped_through = 0
        self._bytes = 0
        self.overflowed = False

    @property
    def last_seq(self) -> int:
        return self._next - 1

    @property
    def retained_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, payload: Mapping[str, object], now: float) -> JournalEntry:
        """Sequence ``payload`` and keep it; raises JournalOverflow past the byte cap."""
        if self.overflowed:
            raise JournalOverflow("duplex event journal already exceeded its byte limit")
        self.prune(now)
        sequenced = dict(payload)
        sequenced.pop("server_event_seq", None)
        sequenced["server_event_seq"] = self._next
        text = dumps(sequenced)
        size = len(text.encode("utf-8"))
        if self._bytes + size > self._max_bytes:
            self.overflowed = True
            raise JournalOverflow(
                "duplex event journal byte limit exceeded: "
                f"{self._bytes + size} > {self._max_bytes}"
            )
        entry = JournalEntry(seq=self._next, created=now, size=size, text=text)
        self._entries.append(entry)
        self._bytes += size
        self._next += 1
        return entry

    def acknowledge(self, seq: int) -> int:
        if seq < 0:
            raise ValueError("acknowledged sequence must not be negative")
        if seq > self.last_seq:
            raise ValueError(
                f"acknowledged sequence {seq} is newer than journal head {self.last_seq}"
            )
        removed = 0
        while self._entries and self._entries[0].seq <= seq:
            self._bytes -= self._entries.popleft().size
            removed += 1
        self._dropped_through = max(self._dropped_through, seq)
        return removed

    def prune(self, now: float) -> int:
        cutoff = now - self._ttl_s
        removed = 0
        while self._entries and self._entries[0].created <= cutoff:
            entry = self._entries.popleft()
            self._bytes -= entry.size
            self._dropped_through = max(self._dropped_through, entry.seq)
            removed += 1
        return removed

    def replay_after(self, seq: int, now: float) -> tuple[JournalEntry, ...]:
        """Entries after ``seq``; JournalGap if they are gone, ValueError if ``seq`` is ahead."""
        if seq < 0:
            raise ValueError("replay sequence must not be negative")
        self.prune(now)
        if self.overflowed:
            raise JournalGap("duplex event journal overflowed; replay is incomplete")
        if seq < self._dropped_through:
            raise JournalGap(
                f"requested sequence {seq} is older than retained journal boundary "
                f"{self._dropped_through}"
            )
        if seq > self.last_seq:
            raise ValueError(f"requested sequence {seq} is newer than journal head {self.last_seq}")
        return tuple(entry for entry in self._entries if entry.seq > seq)
