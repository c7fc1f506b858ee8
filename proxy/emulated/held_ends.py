"""Save first, send second, for a response's end: ``response.done`` reaches the
client only once the store holds a checkpoint with it (``SavedMark`` in
``proxy/persist/saved_mark.py``).

Otherwise an owner killed between sending the end and its next checkpoint (they are
coalesced, ``[store] checkpoint_interval_s``) leaves the client ahead of the store: a
replica that takes the session over restores the response as still open and ends it
again. The resume carries only the client's last seq and the replay log stops at the
checkpoint, so the new owner cannot tell (docs/architecture.md, "Session state,
resume and fencing").

What the client is sent after a held end waits behind it: order is part of the
protocol. Audio is never held on its own, only behind an end. The wait is one store
round trip, bounded: past ``HOLD_BOUND`` store timeouts, or at once when the store
is down (or the session is not persisted), the end goes anyway (an event is never
lost) and ``duplex_proxy_response_ends_unsaved_total`` counts it. The memory store
goes with the process: there is nothing to wait for. With no client attached an end
is not held (nobody is sent it); a client that attaches on this replica is replayed
what the store does not hold yet only once it does.

When the proxy closes the client itself (``settle``) what it is owed goes before the
closing error: all of it at once if the close is final (the session ends there, its
record is deleted, nothing resumes it); only what the store holds if the client is
told to resume elsewhere (1012, a drain): an end the store still lacks after the
bounded wait is withheld (counted as ``withheld``); the session's final flush
normally saves it and the resume replays it, else the resume restores its response
as open and ends it. Either way the client is sent one end. The session may outlive
such a close: a client that attaches later is held for again.

What is held is bounded (``[store] held_max_frames``, ``held_max_bytes``): while the
store is slow or down a session that talks on would otherwise hold ever more. Past
the cap the ends held are given up on: they and what follows go out unsaved, logged
(``held_events_over_cap``) and counted (``over_cap``). That is the same trade as the
time bound: the client keeps talking, and only an owner killed before its next
checkpoint could leave it a response that ends twice; closing the session instead
would end every session on a slow store.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from proxy.metrics import Metrics
from proxy.persist.persister import Persister
from proxy.store.memory import MemoryStore

# A checkpoint is two store writes, and one may be under way when the end is stamped.
HOLD_BOUND = 4
# How a response's end reads in the replay log (``shim/journal.py`` writes compact
# JSON; the same characters inside a string value would be escaped).
END_TYPE = '"type":"response.done"'


@dataclass(slots=True)
class _End:
    seq: int  # what the client is sent from this seq on waits
    through: int  # until the store holds every event up to this seq
    over: bool = False  # its wait is over (saved, or given up on)


class HeldEnds:
    def __init__(self, persister: Persister, metrics: Metrics, mode: str) -> None:
        self.persister = persister
        self.mode = mode
        self.unsaved = metrics.response_ends_unsaved
        store = persister.state.store
        self.shared = store is not None and not isinstance(store, MemoryStore)
        self.bound_s = HOLD_BOUND * persister.state.config.store.timeout_s
        # Seqs of the ends not known to be saved yet, oldest first, and whether each
        # one's wait is over.
        self._ends: deque[_End] = deque()
        # What the attached client is owed behind them: (the seq it follows, send, size).
        self._held: deque[tuple[int, Callable[[], object], int]] = deque()
        self._held_bytes = 0
        cfg = persister.state.config.store
        self.max_frames, self.max_bytes = cfg.held_max_frames, cfg.held_max_bytes
        self._waits: set[asyncio.Task[None]] = set()
        self._released = False  # the session stops or moved: nothing is held any more
        self._withhold = False  # the client resumes elsewhere: what is unsaved stays
        self._over_logged = False  # held_events_over_cap logged, the store not caught up

    @property
    def clear(self) -> bool:
        """Nothing held: an event goes out at once."""
        return not self._ends and not self._held

    def ended(self, seq: int, through: int | None = None) -> None:
        """A response's end was stamped at ``seq``: hold it until it is saved (with
        ``through``: hold from ``seq`` until every event up to ``through`` is)."""
        if not self.shared or self._released:
            return
        if not self.persister.saves():
            self.unsaved.labels(self.mode, "not_saving").inc()
            return
        end = _End(seq, seq if through is None else through)
        at = len(self._ends)
        while at and self._ends[at - 1].seq > seq:
            at -= 1
        self._ends.insert(at, end)
        task = asyncio.get_running_loop().create_task(self._wait(end))
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)

    def send(self, after: int, send: Callable[[], object], size: int = 0) -> None:
        """``send`` (a frame of ``size`` bytes) now, or once every end up to ``after``
        is released; past the cap, every end held is given up on."""
        if not self._held and (not self._ends or after < self._ends[0].seq):
            send()
            return
        self._held.append((after, send, size))
        self._held_bytes += size
        if len(self._held) > self.max_frames or self._held_bytes > self.max_bytes:
            self._over_cap()

    def drop(self) -> None:
        """The client changed or left: what the old one was owed stays in the replay
        log, and nobody waits on its ends (a client that attaches: ``replaying``)."""
        self._held.clear()
        self._held_bytes = 0
        self._forget()

    def _forget(self) -> None:
        for task in self._waits:
            task.cancel()
        self._ends.clear()

    def _over_cap(self) -> None:
        ends = sum(1 for end in self._ends if not end.over)  # (the rest were counted)
        self.unsaved.labels(self.mode, "over_cap").inc(ends)
        if not self._over_logged:  # once until the store catches up again
            self._over_logged = True
            self.persister.session.log.warning(
                "held_events_over_cap", frames=len(self._held), bytes=self._held_bytes, ends=ends
            )
        self._forget()
        self._go()

    def flush(self, unsaved: bool = True) -> None:
        """Send everything held now; without ``unsaved``, not an end the store lacks,
        nor what follows it (each such end counted as ``withheld``). Ends stamped
        later are held again."""
        saved = self.persister.saved.seq
        lacking = [e.seq for e in self._ends if not e.over and e.through > saved]
        if lacking and self._held and not unsaved:
            self.unsaved.labels(self.mode, "withheld").inc(len(lacking))
            while self._held and self._held[-1][0] >= lacking[0]:
                self._held_bytes -= self._held.pop()[2]
        self._forget()
        self._go()

    def release(self, unsaved: bool = True) -> None:
        """``flush``, and from now on hold nothing: the session stops, or moves on
        elsewhere (an end stamped while it closes goes at once)."""
        self._released = True
        self.flush(unsaved)

    async def settle(self, code: int) -> None:
        """The proxy closes the client with ``code``: what it is owed goes now, but for
        a client told to resume elsewhere (1012) only once the store holds it, bounded
        (an end still unsaved then is withheld, for the resume to give)."""
        if code == 1012:
            self._withhold = True
            try:
                self.persister.flush_now()
                if self._waits:
                    await asyncio.wait(set(self._waits))
            finally:
                self._withhold = False
        self.flush(unsaved=code != 1012)

    def replaying(self, after: int, head: int) -> None:
        """A client attached and is replayed the events after ``after`` up to ``head``:
        those the store does not hold yet wait for it (they may hold an end that went
        unheld while no client was attached)."""
        start = max(self.persister.saved.seq, after)
        if head <= start:
            return
        entries = self.persister.session.journal.entries()
        # Only a range with an end in it is held (and, unsaved, counted as one).
        if any(e.seq > start and END_TYPE in e.text for e in entries):
            self.ended(start + 1, head)

    async def _wait(self, end: _End) -> None:
        if not await self.persister.saved.through(end.through, self.bound_s):
            if self._withhold:
                return  # left for ``flush``: not sent to a client that resumes
            why = "timeout" if self.persister.saves() else "not_saving"
            self.unsaved.labels(self.mode, why).inc()
        else:
            self._over_logged = False
        end.over = True
        while self._ends and self._ends[0].over:
            self._ends.popleft()
        self._go()

    def _go(self) -> None:
        first = self._ends[0].seq if self._ends else None
        while self._held and (first is None or self._held[0][0] < first):
            _, send, size = self._held.popleft()
            self._held_bytes -= size
            send()
