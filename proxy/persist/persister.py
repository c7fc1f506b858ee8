"""``Persister``: checkpoints one emulated session into the store, fenced by its lease.

The session's life in the store: registered when it opens (``create``), carried on at
a new epoch after a resume (``adopt``), checkpointed after what it handles (``poke``),
at most once per ``checkpoint_interval_s`` unless the client just left, its lease kept
meanwhile (``run``), and deleted when it ends for good (``finish``). The record is
``session_record.py``'s, its writes ``checkpoint_writes.py``'s.
"""

from __future__ import annotations

import contextlib
import time

from proxy.persist.checkpoint import serialised
from proxy.persist.checkpoint_writes import CheckpointWriter
from proxy.persist.lease_pace import set_within
from proxy.store.base import LeaseLost, StoreUnavailable, hash_token


class Persister(CheckpointWriter):
    async def create(self, token: str) -> bool:
        """Register a new session; False (resume unavailable) if the store is down."""
        store = self.state.store
        if store is None:
            return False
        self.epoch = 1
        self.token_hash = hash_token(token)
        record = self.record()
        try:
            await store.create(record)
        except (StoreUnavailable, LeaseLost) as exc:
            self.session.log.warning(
                "resume_unavailable", reason="session store unavailable", error=str(exc)
            )
            return False
        self.enabled = True
        self._written = serialised(record)
        self._last_write = time.monotonic()
        return True

    def adopt(
        self, epoch: int, token: str, flushed_seq: int | None = None, saved: int | None = None
    ) -> None:
        """Carry the session on at ``epoch`` with a new token; ``saved``: the seq the
        store is known to hold (None: the mark stays)."""
        self.epoch, self.token_hash, self.enabled = epoch, hash_token(token), True
        self.replaced, self._written = False, {}
        self.flushed_seq = self.flushed_seq if flushed_seq is None else flushed_seq
        self.saved.reached(self.saved.seq if saved is None else saved)

    def poke(self) -> None:
        """Something changed: checkpoint it (within ``checkpoint_interval_s``: coalesced)."""
        self._changed_at = time.monotonic()
        self._wake.set()

    def upstream_handed_on(self) -> bool:
        """Whether a new owner can resume the upstream's session from the store."""
        return self._sealer.sealed and (self.enabled or self.replaced)

    async def run(self) -> None:
        # Woken by a ``poke`` (the session handled something), else for the lease touch
        # alone; both waits end when the lease is due: the keys never expire meanwhile.
        while not self.session.finished.is_set():
            woken = await set_within(self._wake, self._lease_due())
            self._wake.clear()
            self._now.clear()  # a flush_now during a touch: served by what comes next
            if woken or not self._written or self._store_down:
                await self.flush()
            else:
                await self._touch()  # nothing handled since: no record to build
            if woken:  # a busy session: one checkpoint per interval, unless the client left
                interval = self.state.config.store.checkpoint_interval_s
                await set_within(self._now, min(interval, self._lease_due()))
                self._now.clear()

    async def finish(self, final: bool) -> None:
        """The session stops here: persist it; if ``final`` (not drained to resume
        elsewhere), delete its record so nobody resumes a session that ended."""
        await self.flush(retry_now=True)  # nothing retries it later
        store = self.state.store
        if not final or not self.enabled or store is None:
            return
        async with self.lock:
            self.enabled = False
            with contextlib.suppress(StoreUnavailable, LeaseLost):
                await store.delete(self.session.session_id, self.epoch)
