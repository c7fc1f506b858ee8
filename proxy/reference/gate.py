"""Who may speak now: the hook behind the ``starve_sessions`` fault.

Healthy backends let every session's reply audio flow at once.  With the fault
on, only the oldest live member gets audio; the others wait until it leaves --
the symptom of a server that serialises sessions behind one GPU stream.
"""

from __future__ import annotations

import asyncio


class AudioGate:
    __slots__ = ("_changed", "_members", "starve")

    def __init__(self, *, starve: bool) -> None:
        self.starve = starve
        self._members: dict[object, None] = {}
        self._changed = asyncio.Event()

    def join(self, member: object) -> None:
        self._members[member] = None

    def leave(self, member: object) -> None:
        if member in self._members:
            del self._members[member]
            self._changed.set()

    def _may_speak(self, member: object) -> bool:
        return not self.starve or next(iter(self._members), member) is member

    async def wait_turn(self, member: object) -> float:
        """Wait until ``member`` may send audio; returns the seconds it waited."""
        if self._may_speak(member):
            return 0.0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while not self._may_speak(member):
            self._changed.clear()
            await self._changed.wait()
        return loop.time() - started
