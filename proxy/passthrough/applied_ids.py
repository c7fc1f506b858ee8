"""The client event ids a passthrough session already applied, on any replica.

A client that reconnects re-sends what it is not sure arrived; the relay drops an
event whose id it has seen. The ids live in memory per session and, across a
disconnect, in the session's store record.
"""

from __future__ import annotations

import contextlib

from proxy.connection import ClientConnection
from proxy.store.base import LeaseLost, StoreUnavailable
from shim.journal import RecentIds


async def applied_ids(session: ClientConnection) -> RecentIds | None:
    """The client event ids this passthrough session already applied (any replica)."""
    state, sid = session.state, session.passthrough_sid
    if sid is None:
        return None
    ids = state.passthrough_ids.get(sid)
    if ids is None:
        ids = RecentIds(state.config.store.recent_event_ids)
        if state.store is not None:
            with contextlib.suppress(StoreUnavailable, ValueError):
                record = await state.store.load(sid)
                for event_id in record.recent_event_ids if record else []:
                    ids.seen(event_id)
        state.passthrough_ids[sid] = ids
        while len(state.passthrough_ids) > 2 * state.config.server.max_sessions:
            state.passthrough_ids.popitem(last=False)
    state.passthrough_ids.move_to_end(sid)
    return ids


async def save_ids(session: ClientConnection, ids: RecentIds) -> None:
    """On disconnect, leave the applied ids where a resume on any replica finds them."""
    store, sid = session.state.store, session.passthrough_sid
    if store is None or sid is None:
        return
    with contextlib.suppress(StoreUnavailable, LeaseLost, ValueError):
        record = await store.load(sid)
        if record is not None:
            record.recent_event_ids = ids.items()
            await store.save(record)
