"""``Persister``: checkpoints one emulated session into the store, fenced by its lease."""

from __future__ import annotations

import asyncio
import contextlib
import time

from proxy.persist.checkpoint import SameJson, checkpoint_of, pack_state, serialised
from proxy.persist.lease_pace import lease_check_interval, lease_due, retry_pause, set_within
from proxy.persist.port import MirroredSession
from proxy.persist.saved_mark import SavedMark
from proxy.persist.sealing import TokenSealer
from proxy.state import ProxyState
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable, hash_token
from proxy.store.secret_box import secret_box
from shim.snapshot import upstream_position
from shim.snapshot_split import split_static


class Persister:
    def __init__(self, session: MirroredSession, state: ProxyState) -> None:
        self.session, self.state = session, state
        self.enabled = False
        # Another replica took the session over: this runner is letting go of it.
        self.replaced = False
        self.epoch, self.token_hash = 0, ""
        # Who opened the session (stored, so a resume by other credentials is denied).
        self.key_id = ""
        # Head of the replay log as written to the store.
        self.flushed_seq = session.journal.seq
        self.saved = SavedMark(session.journal.seq, self.flush_now, self.saves)
        # One store conversation at a time (a flush, or a resume moving the lease).
        self.lock = asyncio.Lock()
        # One resume of this session at a time on this replica.
        self.resume_lock = asyncio.Lock()
        # Set between two inputs of the session loop: a snapshot taken then agrees
        # with the journal (an input's actions are stamped one by one, with awaits
        # in between). The session loop clears it while it handles an input.
        self.idle = asyncio.Event()
        self.idle.set()
        self._wake = asyncio.Event()
        self._changed_at = time.monotonic()  # the last poke: the lease check's pace
        # Set to skip what is left of the interval between two checkpoints.
        self._now = asyncio.Event()
        # Each record field as last written at this epoch (empty: write them all).
        self._written: dict[str, bytes | SameJson] = {}
        self._sealer = TokenSealer(secret_box(state.config.store), session.session_id)
        self._store_down, self._down_since_try = False, 0.0
        self._last_write = time.monotonic()
        self._failed_at = 0.0  # the last write that failed
        self._written_acked = session.journal.acked
        self._reported: tuple[str, int] | None = None  # upstream position last reported

    def record(self, epoch: int | None = None, token_hash: str | None = None) -> SessionRecord:
        """The session as it is now: snapshot, its seq, and the tail not yet logged."""
        r = self.session
        facts = r.stored_facts()
        tail = [(e.seq, e.text) for e in r.journal.entries() if e.seq > self.flushed_seq]
        shim, static, conversation = split_static(self._sealer.seal(r.snapshot()))
        return SessionRecord(
            session_id=r.session_id,
            token_hash=self.token_hash if token_hash is None else token_hash,
            model=facts.model,
            mode=facts.mode,
            epoch=self.epoch if epoch is None else epoch,
            owner=self.state.replica_id,
            acked_seq=r.journal.acked,
            last_seq=self.flushed_seq,
            state=pack_state(r.journal.seq, shim, tail),
            static=static,
            conversation=conversation,
            upstream=facts.upstream,
            recent_event_ids=r.recent.items(),
            key_id=self.key_id,
        )

    async def checkpoint(
        self, epoch: int | None = None, token_hash: str | None = None
    ) -> SessionRecord:
        """``record()`` taken between two inputs of the session loop."""
        while not self.idle.is_set():
            await self.idle.wait()
        return self.record(epoch, token_hash)

    # ------------------------------------------------------------------ lifecycle
    async def create(self, token: str) -> bool:
        """Register a new session; False (resume unavailable) if the store is down."""
        store = self.state.store
        if store is None:
            return False
        self.epoch, self.token_hash = 1, hash_token(token)
        record = self.record()
        try:
            await store.create(record)
        except (StoreUnavailable, LeaseLost) as exc:
            self.session.log.warning(
                "resume_unavailable", reason="session store unavailable", error=str(exc)
            )
            return False
        self.enabled = True
        self._written, self._last_write = serialised(record), time.monotonic()
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

    def flush_now(self) -> None:
        """Checkpoint without waiting out the interval: the client just left, and a
        resume elsewhere must find everything it received in the store."""
        self._wake.set()
        self._now.set()

    def let_go(self) -> None:
        """Another replica holds the session: stop writing, whatever happens next."""
        self.enabled, self.replaced = False, True
        self.saved.wake()

    def saves(self) -> bool:
        """Whether a checkpoint is on its way: persisting, and the store answers."""
        return self.enabled and not self._store_down

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

    # ------------------------------------------------------------------ flush
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
                self._last_write, self._written_acked = time.monotonic(), record.acked_seq
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
        r, self._failed_at = self.session, time.monotonic()
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
        self._written, self._last_write = serialised(record), time.monotonic()
        self._answered()  # it holds every event now (a held end waits for this)
        self.saved.reached(record.state["seq"])
        r.log.info("session_reregistered", reason="the session store had lost it")
        return False
