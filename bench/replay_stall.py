"""A proxy that stalls, for the barge-in replays in audio time (``bench/bargein_replay.py``,
``bench/bargein_relay_replay.py``, their ``--proxy-stall EVERY,LENGTH``).

Once the answer's first delta is out, the session handles nothing for LENGTH ms of every
EVERY ms; what arrived meanwhile waits, and is handled in order, all at once, when the
stall ends. A client event keeps the time the edge read it (``arrived_ms``) and takes
the handling time as its ``now_ms``, as the edge stamps a late-handled frame.
"""

from __future__ import annotations

from typing import Protocol

from shim.actions import Action
from shim.inputs import ClientEvent, Input


class Session(Protocol):
    def handle(self, inp: Input) -> list[Action]: ...


class StalledProxy:
    def __init__(self, session: Session, stall: tuple[int, int] | None) -> None:
        self.session, self.stall = session, stall
        self.stalled = False
        self.waiting: list[Input] = []  # arrived while the proxy stalled, not yet handled

    def tick(self, now: float, since_first_delta: float | None) -> list[Action]:
        """Start of a chunk at ``now``: stalled or not; if not, what waited, handled."""
        stall, since = self.stall, since_first_delta
        self.stalled = stall is not None and since is not None and since % stall[0] < stall[1]
        if self.stalled:
            return []
        actions: list[Action] = []
        for inp in self.waiting:
            if isinstance(inp, ClientEvent):
                inp = ClientEvent(inp.event, inp.raw, now, inp.now_ms)
            actions += self.session.handle(inp)
        self.waiting.clear()
        return actions

    def handle(self, inp: Input) -> list[Action]:
        if self.stalled:
            self.waiting.append(inp)
            return []
        return self.session.handle(inp)
