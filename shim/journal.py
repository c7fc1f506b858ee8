"""Server event sequencing and the replay log, plus client event de-duplication.

vLLM-Omni duplex dialect (``docs/protocol.md``): every server event carries a monotonically
increasing ``server_event_seq`` (from 1, the last key); the client acks with
``session.event_ack``; ``session.resume`` replays every event after the client's
last seq, exactly once, in order. The log is bounded by bytes and by age; once a
gap opens (trimmed past what a client still needs), resume says so instead of
replaying a partial history.

The byte bound is the stores' own (``proxy/store/memory.py``, the Redis log in
``proxy/store/redis_scripts.py``): each event's UTF-8 bytes (a non-ASCII transcript
counts 2 to 4 bytes a character, not one) plus a fixed cost per entry
(``ENTRY_BYTES``), so a stream of small events cannot hold several times the bound.
One measure on both sides: a session carried on from the store (or resumed here)
is never trimmed here of what the store would still replay, which would end its
resume in a gap although the store had every event.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import orjson

from shim.bounded_ids import BoundedIds


@dataclass(slots=True)
class Entry:
    seq: int
    at_ms: float
    text: str
    size: int  # ``logged_bytes(text)``, counted once


# An entry's cost besides its text's bytes: the text object's header (an ASCII str),
# the entry object (four slots), its float time and int seq, and its slot in the deque
# (CPython, 64-bit); the stores count it too.
ENTRY_BYTES = 49 + 64 + 24 + 28 + 8


def logged_bytes(text: str) -> int:
    """What one logged event counts against the byte bound, here and in the stores."""
    return (len(text) if text.isascii() else len(text.encode())) + ENTRY_BYTES


class Journal:
    def __init__(self, prefix: str, max_bytes: int, max_age_ms: float, start_seq: int = 0) -> None:
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.max_age_ms = max_age_ms
        self.seq = start_seq  # last seq handed out
        self.acked = start_seq  # highest seq the client confirmed
        self.floor = start_seq  # everything <= floor is gone from the log
        self._entries: deque[Entry] = deque()
        self._bytes = 0

    def stamp(self, event: dict[str, Any], now_ms: float) -> str:
        """Give ``event`` an id and the next seq, log it, and return its wire text."""
        self.seq += 1
        if "event_id" not in event:
            event = {"event_id": f"event_{self.prefix}{self.seq:08d}", **event}
        else:
            event = dict(event)
        event["server_event_seq"] = self.seq
        text = orjson.dumps(event).decode()
        entry = Entry(self.seq, now_ms, text, logged_bytes(text))
        self._entries.append(entry)
        self._bytes += entry.size
        self._trim(now_ms)
        return text

    def _trim(self, now_ms: float) -> None:
        while self._entries and (
            self._bytes > self.max_bytes or now_ms - self._entries[0].at_ms > self.max_age_ms
        ):
            gone = self._entries.popleft()
            self._bytes -= gone.size
            self.floor = gone.seq

    def ack(self, seq: int) -> bool:
        """Drop everything up to ``seq``; False if ``seq`` was never sent."""
        if seq > self.seq or seq < 0:
            return False
        self.acked = max(self.acked, seq)
        while self._entries and self._entries[0].seq <= seq:
            gone = self._entries.popleft()
            self._bytes -= gone.size
        self.floor = max(self.floor, seq)
        return True

    def after(self, seq: int, now_ms: float) -> list[str] | None:
        """Every logged event after ``seq`` in order; None if some were already dropped."""
        self._trim(now_ms)
        if seq < self.floor or seq > self.seq:
            return None
        return [e.text for e in self._entries if e.seq > seq]

    def entries(self) -> list[Entry]:
        return list(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes


# What the remembered ids may hold in all, in characters: a second bound behind the
# edge's cap on each id (``[server] max_event_id_chars``), 256 ids of 1 KiB by default.
RECENT_IDS_MAX_CHARS = 256 * 1024


class RecentIds(BoundedIds):
    """Client ``event_id``s already applied, most recent ``limit`` of them, and no more
    than ``max_chars`` characters of them in all (the oldest go first; the newest id
    is always kept).

    They are there for a client that re-sends, on a new connection, what it is not
    sure the old one delivered: an id applied on an earlier connection of the session
    is dropped once when it comes again (``new_connection`` starts the next one). An id
    that repeats on one connection is the client's own affair, a tag it reuses (GA sets
    no rule on them): applied each time, as OpenAI and vLLM-Omni apply it."""

    __slots__ = ("_conn", "_when")

    def __init__(self, limit: int, max_chars: int = RECENT_IDS_MAX_CHARS) -> None:
        super().__init__(limit, max_chars)
        self._conn = 0  # the connection now attached, counted from the first
        self._when: dict[str, int] = {}  # the connection each kept id was last met on

    def new_connection(self) -> None:
        """A connection attaches: what came before it counts as re-sent if it comes again."""
        self._conn += 1

    def seen(self, event_id: str) -> bool:
        """True if applied on an earlier connection and not met on this one yet (drop
        it); otherwise remember it and return False (apply it)."""
        earlier = event_id in self and self._when.get(event_id) != self._conn
        self.add(event_id)
        self._when[event_id] = self._conn
        if len(self._when) > 2 * len(self) + 64:  # forget the ids the bound let go
            self._when = {i: self._when[i] for i in self if i in self._when}
        return earlier

    def items(self) -> list[str]:
        return list(self)
