"""Ids kept in the order they first came, the oldest let go past a bound.

A session recognises a few kinds of ids later, each kind bounded so that a client
cannot grow it: its client's applied ``event_id``s (``journal.RecentIds``), the user
turns the proxy committed to a turn-based upstream (``dialects/turn_items.py``), the
items a duplex upstream has besides the assistant's (``dialects/relay_talk.py``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator


class BoundedIds:
    """At most ``limit`` ids, of at most ``max_chars`` characters in all; the oldest go
    first, the newest is always kept. An id added again keeps its place."""

    __slots__ = ("_chars", "_ids", "_limit", "_max_chars")

    def __init__(self, limit: int, max_chars: float = math.inf) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._limit = limit
        self._max_chars = max_chars
        self._chars = 0

    def add(self, item_id: str) -> bool:
        """Keep ``item_id``: False if it was kept already."""
        if item_id in self._ids:
            return False
        self._ids[item_id] = None
        self._chars += len(item_id)
        while len(self._ids) > self._limit or (
            self._chars > self._max_chars and len(self._ids) > 1
        ):
            self._chars -= len(self._ids.popitem(last=False)[0])
        return True

    def discard(self, item_id: object) -> None:
        if isinstance(item_id, str) and item_id in self._ids:
            del self._ids[item_id]
            self._chars -= len(item_id)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)
