"""The client event ids a passthrough session already applied, on any replica.

A client that reconnects re-sends what it is not sure arrived; the relay drops an
event whose id it has seen. The ids live in memory per session and in the session's
store record, where each relay adds them as it applies them (``IdsWriter``): a
resume on another replica a moment after a drop finds every id applied before it.
The writes are fenced by the relay's lease epoch and carry only the new ids, never
the token: a relay that a resume replaced cannot put its stale binding back. They are
coalesced like checkpoints (at most one per ``[store] checkpoint_interval_s``; a
client streaming audio with an id on every append is a few writes a second, not one
per frame), and what is pending is written when the relay ends.
"""

from __future__ import annotations

import asyncio
import contextlib

from proxy.connection import ClientConnection
from proxy.logging import Logger
from proxy.passthrough.rebind import follows_rebind
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable
from shim.journal import RecentIds

# After a failed write (store down), wait this long before trying again.
RETRY_S = 0.5
# Ids are the client's: longer ones are deduplicated here but never stored.
MAX_STORED_ID_LEN = 256


async def applied_ids(session: ClientConnection) -> RecentIds | None:
    """The client event ids this passthrough session already applied (any replica).

    The store's ids are merged in at every relay start: the session may have been
    on another replica since this one last relayed it.
    """
    state, sid = session.state, session.passthrough_sid
    if sid is None:
        return None
    ids = state.passthrough_ids.get(sid)
    if ids is None:
        ids = RecentIds(state.config.store.recent_event_ids)
        state.passthrough_ids[sid] = ids
        while len(state.passthrough_ids) > 2 * state.config.server.max_sessions:
            state.passthrough_ids.popitem(last=False)
    state.passthrough_ids.move_to_end(sid)
    if state.store is not None:
        with contextlib.suppress(StoreUnavailable, ValueError):
            record = await state.store.load(sid)
            for event_id in record.recent_event_ids if record else []:
                ids.seen(event_id)
    ids.new_connection()  # this relay's: the ids above, re-sent, are dropped once
    return ids


def ids_writer(session: ClientConnection, binding: SessionRecord | None) -> IdsWriter | None:
    """A writer for the relay holding ``binding`` (None: not bound)."""
    store, sid = session.state.store, session.passthrough_sid
    if store is None or sid is None or binding is None:
        return None
    cfg = session.state.config.store
    return IdsWriter(store, binding, cfg.recent_event_ids, session.log, cfg.checkpoint_interval_s)


class IdsWriter:
    """Adds the ids a relay applies to the store, in batches, one write in flight.

    Bounded: at most ``limit`` ids wait (older ones would be trimmed from the record
    anyway). Written at ``binding``'s epoch, which follows the relay's own rebind
    (``proxy/passthrough/rebind.py``); stops once the lease moved on to another
    connection (LeaseLost): the session is elsewhere.
    """

    def __init__(
        self,
        store: SessionStore,
        binding: SessionRecord,
        limit: int,
        log: Logger,
        interval_s: float = 0.0,
    ) -> None:
        self.store, self.binding = store, binding
        self.limit, self.log, self.interval_s = limit, log, interval_s
        self._pending: list[str] = []
        self._wake = asyncio.Event()
        self._stopped = False
        self._task = asyncio.create_task(self._run(), name="passthrough-ids")

    def applied(self, event_id: str) -> None:
        if self._stopped or self.limit <= 0 or len(event_id) > MAX_STORED_ID_LEN:
            return
        self._pending.append(event_id)
        del self._pending[: -self.limit]
        self._wake.set()

    async def close(self) -> None:
        """Write what is still pending (bounded by the store's timeout), then stop."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._pending and not self._stopped:
            with contextlib.suppress(StoreUnavailable, LeaseLost, ValueError):
                await self._write()

    async def _run(self) -> None:
        while not self._stopped:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._write()
            except StoreUnavailable:
                await asyncio.sleep(RETRY_S)
                self._wake.set()
            except (LeaseLost, ValueError) as exc:
                if isinstance(exc, LeaseLost) and await self._follows():
                    self._wake.set()
                    continue
                self._stopped = True
                self.log.info("passthrough_ids_stopped", reason="the session moved on")
            else:
                await asyncio.sleep(self.interval_s)  # the ids of that long go in one write

    async def _write(self) -> None:
        batch, self._pending = self._pending, []
        binding = self.binding
        try:
            await self.store.add_event_ids(binding.session_id, binding.epoch, batch)
        except (StoreUnavailable, LeaseLost, asyncio.CancelledError):
            self._pending[:0] = batch  # in order, before what came meanwhile
            del self._pending[: -self.limit]
            raise

    async def _follows(self) -> bool:
        """Whether the LeaseLost was this relay's own rebind landing (written again at
        its epoch), not the session moving on; a store that does not answer: retried."""
        try:
            return await follows_rebind(self.store, self.binding)
        except StoreUnavailable:
            await asyncio.sleep(RETRY_S)
            return True
