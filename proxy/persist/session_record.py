"""``RecordKeeper``: one emulated session's state as a store record, and what it was.

The record (``SessionRecord``): the session's snapshot, sealed where it holds the
upstream's token (``sealing.py``) and split for the store (``shim/snapshot_split.py``),
with its seq and the tail of the replay log not yet logged (``checkpoint.py``); taken
only between two inputs of the session loop, where a snapshot agrees with the journal.
Beside it, who holds the session here (its epoch and token) and what of it the store
holds; ``checkpoint_writes.py`` writes it, ``persister.py`` runs the writes.
"""

from __future__ import annotations

import asyncio
import time

from proxy.persist.checkpoint import SameJson, pack_state
from proxy.persist.port import MirroredSession
from proxy.persist.saved_mark import SavedMark
from proxy.persist.sealing import TokenSealer
from proxy.state import ProxyState
from proxy.store.base import SessionRecord
from proxy.store.secret_box import secret_box
from shim.snapshot_split import split_static


class RecordKeeper:
    def __init__(self, session: MirroredSession, state: ProxyState) -> None:
        self.session = session
        self.state = state
        self.enabled = False
        # Another replica took the session over: this runner is letting go of it.
        self.replaced = False
        self.epoch = 0
        self.token_hash = ""
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
        self._store_down = False
        self._down_since_try = 0.0
        self._last_write = time.monotonic()
        self._failed_at = 0.0  # the last write that failed
        self._written_acked = session.journal.acked
        self._reported: tuple[str, int] | None = None  # upstream position last reported

    def flush_now(self) -> None:
        """Checkpoint without waiting out the interval: the client just left, and a
        resume elsewhere must find everything it received in the store."""
        self._wake.set()
        self._now.set()

    def saves(self) -> bool:
        """Whether a checkpoint is on its way: persisting, and the store answers."""
        return self.enabled and not self._store_down

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
