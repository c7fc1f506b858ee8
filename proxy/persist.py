"""Mirror an emulated session into the store so any replica can resume it.

Every ``PERSIST_INTERVAL_S`` (and on shutdown) the events stamped since the last
flush go to the replay log, and the record (acked seq, shim snapshot, recent client
event ids, token hash) is saved if it changed. All writes are fenced by the lease
epoch: a ``LeaseLost`` means another replica resumed the session, so this one lets
go of it. A store outage only pauses persistence; live talk never waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from proxy.store.base import LeaseLost, SessionRecord, StoreUnavailable, hash_token

if TYPE_CHECKING:
    from proxy.emulated import EmulatedRunner

PERSIST_INTERVAL_S = 0.05


class Persister:
    def __init__(self, runner: EmulatedRunner) -> None:
        self.runner = runner
        self.enabled = False
        self.epoch = 0
        self.token_hash = ""
        self.flushed_seq = runner.journal.seq
        self._saved: tuple[Any, ...] | None = None
        self._lock = asyncio.Lock()
        self._store_down = False
        self._last_write = 0.0
        self._written_acked = 0

    def record(self) -> SessionRecord:
        r = self.runner
        return SessionRecord(
            session_id=r.session_id,
            token_hash=self.token_hash,
            model=r.model,
            mode=r.cls.mode,
            epoch=self.epoch,
            owner=r.state.replica_id,
            acked_seq=r.journal.acked,
            last_seq=r.journal.seq,
            state=r.shim.snapshot(),
            upstream={
                "route": r.route.model,
                "url": r.upstream_url,
                "kind": r.cls.kind,
                "upstream_model": r.upstream_model,
                "capabilities": dict(r.cls.upstream_capabilities or {}),
                "reasons": list(r.cls.reasons),
                "created": r.upstream_created,
            },
            recent_event_ids=r.recent.items(),
        )

    async def create(self, token: str) -> bool:
        """Register a new session; False (resume unavailable) if the store is down."""
        store = self.runner.state.store
        if store is None:
            return False
        self.epoch, self.token_hash = 1, hash_token(token)
        try:
            await store.create(self.record())
        except StoreUnavailable:
            self.runner.log.warning("resume_unavailable", reason="session store unavailable")
            return False
        self.enabled = True
        return True

    def adopt(self, epoch: int, token: str) -> None:
        """Continue a session taken over from the store at ``epoch``."""
        self.epoch, self.token_hash, self.enabled = epoch, hash_token(token), True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(PERSIST_INTERVAL_S)
            await self.flush()

    async def flush(self) -> None:
        store = self.runner.state.store
        if not self.enabled or store is None:
            return
        async with self._lock:
            r = self.runner
            fresh = [(e.seq, e.text) for e in r.journal.entries() if e.seq > self.flushed_seq]
            record = self.record()
            key = (
                record.acked_seq,
                record.last_seq,
                record.token_hash,
                str(record.state),
                len(record.recent_event_ids),
            )
            # Only writes refresh the keys' expiry: a quiet session still writes now and
            # then so its keys outlive a silence longer than disconnect_grace_s.
            keepalive = (
                time.monotonic() - self._last_write > r.state.config.store.disconnect_grace_s / 3
            )
            try:
                if fresh or keepalive or r.journal.acked != self._written_acked:
                    await store.append_events(r.session_id, self.epoch, fresh, r.journal.acked)
                    self._last_write, self._written_acked = time.monotonic(), r.journal.acked
                    if fresh:
                        self.flushed_seq = fresh[-1][0]
                if key != self._saved:
                    await store.save(record)
                    self._saved = key
                if self._store_down:
                    self._store_down = False
                    r.log.info("store_recovered")
            except StoreUnavailable as exc:
                if not self._store_down:
                    self._store_down = True
                    r.log.warning("store_unavailable", error=str(exc))
            except LeaseLost:
                self.enabled = False
                r.log.info("session_taken_over", reason="another connection resumed it")
                with contextlib.suppress(Exception):
                    await r.replaced_elsewhere()
