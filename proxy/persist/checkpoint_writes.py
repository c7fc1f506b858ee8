"""``CheckpointWriter``: a session's record written into the store, fenced by its lease.

Only what changed since the last write at this epoch (the static parts, instructions
and the like, seldom do), then the replay log's new tail and the client's acks; a
session that handled nothing since keeps its lease with a touch alone. A write the
store refuses because the lease moved means another replica holds the session now (it
lets go), or that the store lost it (it registers it again, with all the journal has).
A store that is down pauses resume until a write goes through again.
"""

from __future__ import annotations

import time

from proxy.persist.checkpoint import checkpoint_of, serialised
from proxy.persist.lease_pace import lease_check_interval, lease_due, retry_pause
from proxy.persist.session_record import RecordKeeper
from proxy.store.base import LeaseLost, SessionStore, StoreUnavailable
from shim.snapshot import upstream_position


class CheckpointWriter(RecordKeeper):
    def let_go(self) -> None:
        """Another replica holds the session: stop writing, whatever happens next."""
        self.enabled, self.replaced = False, True
        self.saved.wake()

    async def flush(self, retry_now: bool = False) -> None:
        """One checkpoint; ``retry_now``: even within the pause after a failed write."""
        store = self.state.store
        if not self.enabled or store is None:
            if not self.replaced:
                # Nothing can resume it from a store: what was handled is as safe as it gets.
                self._report(self.session.upstream_position())
            return
        async with self.lock:
            if not self.enabled:
                return
            lost = await self._flush(store, retry_now)
        if lost:
            await self._hand_over()

    async def _flush(self, store: SessionStore, retry_now: bool) -> bool:
        """One checkpoint; True if another replica holds the session now."""
        r = self.session
        pause = retry_pause(self._touch_interval())
        if not retry_now and self._store_down and time.monotonic() - self._down_since_try < pause:
            return False
        record = await self.checkpoint()
        tail = checkpoint_of(record).tail
        fields = serialised(record)
        changed = {k: getattr(record, k) for k, v in fields.items() if self._written.get(k) != v}
        due = time.monotonic() - self._last_write >= self._touch_interval()
        try:
            # Only what changed: the static parts (instructions...) seldom do.
            if not self._written:
                await store.save(record)
            elif changed:
                await store.update(r.session_id, self.epoch, changed)
            if changed:  # a fenced write: the keys' expiry is refreshed
                self._last_write = time.monotonic()
            self._written = fields
            self.saved.reached(record.state["seq"])  # record and tail: a resume finds them
            if tail or due or record.acked_seq != self._written_acked:
                await store.append_events(r.session_id, self.epoch, tail, record.acked_seq)
                self._last_write = time.monotonic()
                self._written_acked = record.acked_seq
                if tail:
                    self.flushed_seq = tail[-1][0]
            self._report(upstream_position(record.state["shim"]))
            self._answered()
        except StoreUnavailable as exc:
            self._down_since_try = self._failed_at = time.monotonic()
            if not self._store_down:
                self._store_down = True
                self.saved.wake()
                r.log.warning("store_unavailable", error=str(exc), effect="resume paused")
        except LeaseLost:
            return await self._lease_lost(store)
        return False

    def _answered(self) -> None:
        """A write went through: a store that was down is back."""
        if self._store_down:
            self._store_down = False
            self.session.log.info("store_recovered")

    async def _touch(self) -> None:
        """The lease check alone, for a session that handled nothing since its last
        checkpoint (everything changes through its loop, which pokes)."""
        store, r = self.state.store, self.session
        lost = False
        async with self.lock:
            if not self.enabled or store is None:
                return
            try:
                await store.append_events(r.session_id, self.epoch, [], self._written_acked)
                self._last_write = time.monotonic()
            except StoreUnavailable:
                self._failed_at = time.monotonic()
                return  # the next checkpoint says so and retries
            except LeaseLost:
                lost = await self._lease_lost(store)
        if lost:
            await self._hand_over()

    async def _hand_over(self) -> None:
        """Another replica holds the session now: the session lets its client know."""
        try:
            await self.session.replaced_elsewhere()
        except Exception:
            self.session.log.exception("let_go_failed")

    def _report(self, position: tuple[str, int] | None) -> None:
        """Tell the session how far upstream it is safely checkpointed."""
        if position is None or position == self._reported:
            return
        self._reported = position
        self.session.upstream_checkpointed(*position)

    def _touch_interval(self) -> float:
        quiet = time.monotonic() - self._changed_at
        return lease_check_interval(quiet, self.state.config.store.disconnect_grace_s)

    def _lease_due(self) -> float:
        """Seconds until the lease is written again (none to keep: a touch interval)."""
        if not self.enabled:
            return self._touch_interval()
        return lease_due(self._last_write, self._failed_at, self._touch_interval())

    async def _lease_lost(self, store: SessionStore) -> bool:
        """A fenced write failed: replaced elsewhere (True), or the store lost the keys."""
        r = self.session
        self._failed_at = time.monotonic()
        try:
            current = await store.load(r.session_id)
        except StoreUnavailable:
            return False  # find out at the next flush
        if current is not None:
            if current.epoch == self.epoch:
                return False
            self.let_go()
            r.log.info("session_taken_over", reason="another connection resumed it")
            return True
        # The store lost the session (restarted empty, or the keys expired in a long
        # outage): nobody else can hold it; register it again, with all the journal has,
        # taken between two inputs of the session loop (as ``checkpoint`` is).
        while not self.idle.is_set():
            await self.idle.wait()
        entries = r.journal.entries()
        self.flushed_seq = entries[0].seq - 1 if entries else r.journal.seq
        self._written = {}
        record = self.record()
        try:
            await store.create(record)
        except (StoreUnavailable, LeaseLost):
            return False
        self._written = serialised(record)
        self._last_write = time.monotonic()
        self._answered()  # it holds every event now (a held end waits for this)
        self.saved.reached(record.state["seq"])
        r.log.info("session_reregistered", reason="the session store had lost it")
        return False
