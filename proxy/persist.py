"""Mirror an emulated session into the store so any replica can resume it.

DESIGN §6. Every ``PERSIST_INTERVAL_S`` (and when the session stops) a *checkpoint*
goes to the store in two fenced writes, always in this order:

1. ``save``: the record. Its ``state`` holds the shim snapshot, the
   ``server_event_seq`` it was taken at, and the *tail*: the events stamped since the
   last flush. ``last_seq`` stays the head of the replay log as written so far.
2. ``append_events``: the tail goes to the replay log (and acked events are trimmed).

So the log never runs ahead of the snapshot: a replica taking the session over
between the two writes finds every event up to the snapshot in log + tail, and the
snapshot agrees with the last event the client can be replayed. (Were the log ahead,
a response begun after the snapshot would never end, or one already ended would end
twice.) A resumer merges log and tail; see ``proxy.resume``.

Once a checkpoint is written, the upstream may forget the upstream events it covers:
the persister tells the session (``UpstreamCheckpointed``), which acknowledges them
upstream. A replica taking the session over resumes the upstream's own session from
the snapshot's upstream seq, so the upstream must still hold everything after it.
Without a store there is nothing to wait for: what was handled is acknowledged.

Writes are fenced by the lease epoch. ``LeaseLost`` means one of two things: another
replica resumed the session (this one lets go: its client gets ``session.replaced``)
or the store lost the keys (Redis restarted empty, or they expired during a long
outage) and nobody else can hold it: the session registers itself again. A store
outage only pauses persistence; live talk never waits on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from proxy.store.base import LeaseLost, SessionRecord, StoreUnavailable, hash_token
from shim.inputs import UpstreamCheckpointed

if TYPE_CHECKING:
    from proxy.emulated import EmulatedRunner
    from proxy.store.base import SessionStore

PERSIST_INTERVAL_S = 0.05
# A fenced write at least this often, even when nothing changed: it refreshes the
# keys' expiry, and an owner that lost the session to another replica learns it
# within this (so its still-open client gets session.replaced).
LEASE_CHECK_S = 1.0
# While the store is down, try again this often rather than at every interval (a
# checkpoint after a long outage carries every event since, and serialising it
# for a store that refuses it only costs CPU).
STORE_RETRY_S = 0.5
STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What a stored record says about its session at one instant."""

    seq: int  # the server_event_seq the snapshot was taken at
    shim: dict[str, Any]  # EmulatedSession.snapshot()
    tail: list[tuple[int, str]]  # events up to ``seq`` perhaps not in the log yet


def pack_state(seq: int, shim: dict[str, Any], tail: list[tuple[int, str]]) -> dict[str, Any]:
    return {"v": STATE_VERSION, "seq": seq, "shim": shim, "tail": [[s, t] for s, t in tail]}


def checkpoint_of(record: SessionRecord) -> Checkpoint:
    state = record.state
    if state.get("v") != STATE_VERSION:
        # A bare shim snapshot (no tail): it was taken at the log head.
        return Checkpoint(record.last_seq, state, [])
    tail = [(int(seq), str(text)) for seq, text in state.get("tail", ())]
    return Checkpoint(int(state["seq"]), dict(state["shim"]), tail)


class Persister:
    def __init__(self, runner: EmulatedRunner) -> None:
        self.runner = runner
        self.enabled = False
        # Another replica took the session over: this runner is letting go of it.
        self.replaced = False
        self.epoch = 0
        self.token_hash = ""
        # Head of the replay log as written to the store.
        self.flushed_seq = runner.journal.seq
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
        self._saved_key: tuple[Any, ...] | None = None
        self._store_down = False
        self._down_since_try = 0.0
        self._last_write = time.monotonic()
        self._written_acked = runner.journal.acked
        # The upstream position last reported as checkpointed.
        self._reported: tuple[str, int] | None = None

    # ------------------------------------------------------------------ records
    def record(self, epoch: int | None = None, token_hash: str | None = None) -> SessionRecord:
        """The session as it is now: snapshot, its seq, and the tail not yet logged."""
        r = self.runner
        tail = [(e.seq, e.text) for e in r.journal.entries() if e.seq > self.flushed_seq]
        return SessionRecord(
            session_id=r.session_id,
            token_hash=self.token_hash if token_hash is None else token_hash,
            model=r.model,
            mode=r.cls.mode,
            epoch=self.epoch if epoch is None else epoch,
            owner=r.state.replica_id,
            acked_seq=r.journal.acked,
            last_seq=self.flushed_seq,
            state=pack_state(r.journal.seq, r.shim.snapshot(), tail),
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
        store = self.runner.state.store
        if store is None:
            return False
        self.epoch, self.token_hash = 1, hash_token(token)
        try:
            await store.create(self.record())
        except (StoreUnavailable, LeaseLost) as exc:
            self.runner.log.warning(
                "resume_unavailable", reason="session store unavailable", error=str(exc)
            )
            return False
        self.enabled = True
        self._last_write = time.monotonic()
        return True

    def adopt(self, epoch: int, token: str, flushed_seq: int | None = None) -> None:
        """Carry the session on at ``epoch`` with a new resume token."""
        self.epoch, self.token_hash, self.enabled = epoch, hash_token(token), True
        self.replaced = False
        if flushed_seq is not None:
            self.flushed_seq = flushed_seq
        self._saved_key = None

    def poke(self) -> None:
        """Flush now rather than at the next interval (the client just left: a resume
        elsewhere finds everything it received in the store)."""
        self._wake.set()

    def let_go(self) -> None:
        """Another replica holds the session: stop writing, whatever happens next."""
        self.enabled, self.replaced = False, True

    async def run(self) -> None:
        while not self.runner.finished.is_set():
            try:
                async with asyncio.timeout(PERSIST_INTERVAL_S):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            await self.flush()

    async def finish(self, final: bool) -> None:
        """The session stops here: persist it, or forget it if it ended for good.

        ``final`` is False when the client is meant to resume elsewhere (drain);
        otherwise the record is deleted so nobody resumes a session that ended.
        """
        await self.flush()
        store = self.runner.state.store
        if not final or not self.enabled or store is None:
            return
        async with self.lock:
            self.enabled = False
            with contextlib.suppress(StoreUnavailable, LeaseLost):
                await store.delete(self.runner.session_id, self.epoch)

    # ------------------------------------------------------------------ flush
    async def flush(self) -> None:
        store = self.runner.state.store
        if not self.enabled or store is None:
            if not self.replaced:
                # Nothing can resume it from a store: what was handled is as safe as
                # it gets.
                self._report(self.runner.shim.upstream_position())
            return
        lost = False
        async with self.lock:
            if not self.enabled:
                return
            lost = await self._flush(store)
        if lost:
            try:
                await self.runner.replaced_elsewhere()
            except Exception:
                self.runner.log.exception("let_go_failed")

    async def _flush(self, store: SessionStore) -> bool:
        """One checkpoint; True if another replica holds the session now."""
        r = self.runner
        if self._store_down and time.monotonic() - self._down_since_try < STORE_RETRY_S:
            return False
        record = await self.checkpoint()
        tail = checkpoint_of(record).tail
        ids = record.recent_event_ids
        key = (
            record.acked_seq,
            record.state["seq"],
            record.token_hash,
            orjson.dumps(record.state["shim"]),
            ids[-1] if ids else None,
            len(ids),
        )
        due = time.monotonic() - self._last_write >= self._touch_interval()
        try:
            if key != self._saved_key:
                await store.save(record)
                self._saved_key = key
            if tail or due or record.acked_seq != self._written_acked:
                await store.append_events(r.session_id, self.epoch, tail, record.acked_seq)
                self._last_write, self._written_acked = time.monotonic(), record.acked_seq
                if tail:
                    self.flushed_seq = tail[-1][0]
            self._report(_upstream_position(record.state["shim"]))
            if self._store_down:
                self._store_down = False
                r.log.info("store_recovered")
        except StoreUnavailable as exc:
            self._down_since_try = time.monotonic()
            if not self._store_down:
                self._store_down = True
                r.log.warning("store_unavailable", error=str(exc), effect="resume paused")
        except LeaseLost:
            return await self._lease_lost(store)
        return False

    def _report(self, position: tuple[str, int] | None) -> None:
        """Tell the session how far upstream it is safely checkpointed."""
        if position is None or position == self._reported:
            return
        self._reported = position
        event = UpstreamCheckpointed(position[0], position[1], time.monotonic() * 1000.0)
        self.runner.inputs.put_nowait(event)

    def _touch_interval(self) -> float:
        return min(LEASE_CHECK_S, self.runner.state.config.store.disconnect_grace_s / 3)

    async def _lease_lost(self, store: SessionStore) -> bool:
        """A fenced write failed: replaced elsewhere (True), or the store lost the keys."""
        r = self.runner
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
        # The store lost the session (restarted empty, or the keys expired during a
        # long outage): nobody else can hold it, so register it again, with every
        # event the journal still has.
        entries = r.journal.entries()
        self.flushed_seq = entries[0].seq - 1 if entries else r.journal.seq
        self._saved_key = None
        try:
            await store.create(self.record())
        except (StoreUnavailable, LeaseLost):
            return False
        self._last_write = time.monotonic()
        r.log.info("session_reregistered", reason="the session store had lost it")
        return False


def _upstream_position(shim: dict[str, Any]) -> tuple[str, int] | None:
    """The upstream session and seq a shim snapshot was taken at, if it has one."""
    up = shim.get("upstream")
    if not isinstance(up, dict):
        return None
    sid, seq = up.get("id"), up.get("seq")
    if isinstance(sid, str) and isinstance(seq, int):
        return sid, seq
    return None
