"""In-process session store: the zero-setup default for a single replica.

It keeps the exact semantics of the Redis store so a deployment can switch backends
without behaviour changes: records are copied through JSON (what Redis would reject,
this rejects too), every write is fenced by the lease epoch, keys expire
``disconnect_grace_s`` after the last write, and the replay log is bounded by bytes
and by age. Expiry is lazy (checked on access, swept now and then on create), using
the monotonic clock: nothing here runs in the background.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, check_update
from proxy.store.ids import check_session_id, valid_session_id
from shim.journal import logged_bytes


@dataclass
class _LogEntry:
    seq: int
    text: str
    size: int  # UTF-8 bytes, as Redis counts them
    at: float


@dataclass
class _Session:
    record: SessionRecord
    expires_at: float
    floor: int  # highest seq dropped from the log; events_after below it is a gap
    log: deque[_LogEntry] = field(default_factory=deque)
    log_bytes: int = 0


class MemoryStore(SessionStore):
    def __init__(
        self,
        config: StoreConfig,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._next_sweep = 0.0
        if metrics is not None:
            metrics.store_up.set(1)

    async def healthy(self) -> bool:
        return True

    async def close(self) -> None:
        self._sessions.clear()

    async def create(self, record: SessionRecord) -> None:
        check_session_id(record.session_id)
        self._sweep()
        existing = self._get(record.session_id)
        if existing is not None:
            # A retried create (same token) is a no-op; anything else is a collision.
            if existing.record.token_hash == record.token_hash:
                return
            raise LeaseLost(f"session {record.session_id} already exists")
        self._sessions[record.session_id] = _Session(
            record=self._copy(record),
            expires_at=self._clock() + self._config.disconnect_grace_s,
            floor=record.last_seq,
        )

    async def load(self, session_id: str) -> SessionRecord | None:
        session = self._get(session_id)
        return None if session is None else self._copy(session.record)

    async def take_over(self, session_id: str, owner: str, expected_epoch: int) -> int:
        session = self._fenced(session_id, expected_epoch)
        session.record.epoch += 1
        session.record.owner = owner
        return session.record.epoch

    async def rebind(self, session_id: str, owner: str, old_hash: str, new_hash: str) -> int:
        session = self._get(session_id)
        if session is None:
            raise LeaseLost(f"session {session_id} expired or unknown")
        record = session.record
        if record.token_hash not in (old_hash, new_hash):
            raise LeaseLost(f"session {session_id}: its resume token was rotated elsewhere")
        if record.token_hash == old_hash:
            record.epoch += 1
            record.owner, record.token_hash = owner, new_hash
            record.rebind_until_ms, record.rebind_marks = 0, {}
        session.expires_at = self._clock() + self._config.disconnect_grace_s
        return record.epoch

    async def rebind_mark(
        self, session_id: str, epoch: int, mark: str, until_ms: int, now_ms: int
    ) -> int:
        record = self._fenced(session_id, epoch).record
        marks = {k: v for k, v in record.rebind_marks.items() if k != mark and v > now_ms}
        if until_ms > now_ms:
            marks[mark] = until_ms
        record.rebind_marks, record.rebind_until_ms = marks, max(marks.values(), default=0)
        return record.rebind_until_ms

    async def save(self, record: SessionRecord) -> None:
        session = self._fenced(record.session_id, record.epoch)
        stored = session.record
        new = self._copy(record)
        # Sequence numbers only move forward, whatever a stale snapshot says.
        new.acked_seq = max(stored.acked_seq, new.acked_seq)
        new.last_seq = max(stored.last_seq, new.last_seq)
        session.record = new

    async def update(self, session_id: str, epoch: int, fields: dict[str, Any]) -> None:
        check_update(fields)
        session = self._fenced(session_id, epoch)
        # Only the fields written are copied: the others are the store's own already
        # (a checkpoint writes what changed; megabytes of unchanged instructions in
        # ``static`` are not round-tripped at every flush).
        copied = {k: self._copied(k, v) for k, v in fields.items()}
        session.record = replace(session.record, **copied)

    async def add_event_ids(self, session_id: str, epoch: int, ids: list[str]) -> None:
        session = self._fenced(session_id, epoch)
        known = session.record.recent_event_ids
        known += [i for i in ids if i not in known]
        session.record = self._copy(session.record)

    async def append_events(
        self, session_id: str, epoch: int, events: list[tuple[int, str]], acked_seq: int
    ) -> None:
        session = self._fenced(session_id, epoch)
        record, now = session.record, self._clock()
        for seq, text in events:
            # Idempotent: a retry after an ambiguous failure re-sends what is logged.
            if seq > record.last_seq:
                size = logged_bytes(text)  # as the session's own log counts it
                session.log.append(_LogEntry(seq, text, size, now))
                session.log_bytes += size
                record.last_seq = seq
        record.acked_seq = max(record.acked_seq, acked_seq)
        cutoff = now - self._config.replay_max_age_s
        log = session.log
        while log and (
            log[0].seq <= record.acked_seq
            or session.log_bytes > self._config.replay_max_bytes
            or log[0].at < cutoff
        ):
            dropped = log.popleft()
            session.log_bytes -= dropped.size
            session.floor = max(session.floor, dropped.seq)

    async def events_after(self, session_id: str, seq: int) -> list[tuple[int, str]] | None:
        session = self._get(session_id)
        if session is None or seq < session.floor:
            return None
        cutoff = self._clock() - self._config.replay_max_age_s
        out: list[tuple[int, str]] = []
        for entry in session.log:
            if entry.seq > seq:
                if entry.at < cutoff:
                    return None  # aged out, just not trimmed yet: still a gap
                out.append((entry.seq, entry.text))
        return out

    async def delete(self, session_id: str, epoch: int) -> None:
        session = self._get(session_id)
        if session is None:
            return
        if session.record.epoch != epoch:
            raise LeaseLost(f"session {session_id} is at epoch {session.record.epoch}")
        del self._sessions[session_id]

    def _get(self, session_id: str) -> _Session | None:
        if not valid_session_id(session_id):
            return None
        session = self._sessions.get(session_id)
        if session is not None and session.expires_at <= self._clock():
            del self._sessions[session_id]
            return None
        return session

    def _fenced(self, session_id: str, epoch: int) -> _Session:
        """The session if ``epoch`` still owns it; every write refreshes the expiry."""
        session = self._get(session_id)
        if session is None:
            raise LeaseLost(f"session {session_id} expired or unknown")
        if session.record.epoch != epoch:
            raise LeaseLost(f"session {session_id} is at epoch {session.record.epoch}")
        session.expires_at = self._clock() + self._config.disconnect_grace_s
        return session

    def _sweep(self) -> None:
        """Drop expired sessions nobody asks about again, so memory stays bounded."""
        now = self._clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._config.disconnect_grace_s / 2
        for sid in [s for s, v in self._sessions.items() if v.expires_at <= now]:
            del self._sessions[sid]

    def _copy(self, record: SessionRecord) -> SessionRecord:
        """A deep, JSON-shaped copy: callers never alias stored state."""
        return replace(record, **{k: self._copied(k, getattr(record, k)) for k in _DEEP})

    def _copied(self, name: str, value: Any) -> Any:
        """A field's value as the store keeps it: JSON-shaped fields deep-copied, the
        event ids trimmed to ``recent_event_ids``; the rest (strings, ints) as they are."""
        if name == "recent_event_ids":
            keep = self._config.recent_event_ids
            return list(value[-keep:]) if keep > 0 else []
        if name in _DEEP:
            return orjson.loads(orjson.dumps(value))
        return value


# The record's fields that hold containers (the rest are strings and integers).
_DEEP = ("state", "static", "conversation", "upstream", "recent_event_ids", "rebind_marks")
