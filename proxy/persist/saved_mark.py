"""``SavedMark``: how far a session's events are in the store, and a bounded wait for
it to reach a seq (``proxy.emulated.held_ends`` waits on it before it sends a
response's end, so a client that has the end means the store has it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class SavedMark:
    def __init__(self, seq: int, flush_now: Callable[[], None], saves: Callable[[], bool]) -> None:
        # Every event up to ``seq`` is in a checkpoint the store acknowledged.
        self.seq = seq
        self._flush_now = flush_now
        self._saves = saves
        self._moved = asyncio.Event()

    def reached(self, seq: int) -> None:
        if seq > self.seq:
            self.seq = seq
            self.wake()

    def wake(self) -> None:
        """Waiters look again: the mark moved, or saving stopped."""
        self._moved.set()
        self._moved = asyncio.Event()

    async def through(self, seq: int, within_s: float) -> bool:
        """Checkpoint now and wait until the store holds every event up to ``seq``
        (True); False once nothing will save it (the session stopped persisting, the
        store is down), or after ``within_s``."""
        if self.seq >= seq:
            return True
        self._flush_now()
        try:
            async with asyncio.timeout(within_s):
                while self.seq < seq:
                    if not self._saves():
                        return False
                    await self._moved.wait()
        except TimeoutError:
            return False
        return True
