"""Which upstream holds a passthrough session, kept in the store for any replica.

A resume on another replica finds the upstream here and relays ``session.resume``
to it; the record holds no session state (the upstream keeps that).
"""

from __future__ import annotations

import asyncio

from proxy.connection import ClientConnection
from proxy.logging import Logger
from proxy.passthrough.rebind import follows_rebind
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable, hash_token
from proxy.upstream import UpstreamLink

# How often a live relay refreshes its binding (at most a third of the grace).
BINDING_REFRESH_S = 5.0


async def bind(session: ClientConnection, link: UpstreamLink) -> SessionRecord | None:
    """Record which upstream holds this session (for a resume on another replica).

    The record when a resume through the proxy will find the session again.
    """
    store, route = session.state.store, session.route
    upstream_session = link.created.get("session")
    token = link.created.get("resume_token")
    if (
        store is None
        or route is None
        or not isinstance(upstream_session, dict)
        or not isinstance(token, str)
    ):
        return None
    sid = upstream_session.get("id")
    if not isinstance(sid, str):
        return None
    record = SessionRecord(
        session_id=sid,
        token_hash=hash_token(token),
        model=route.model,
        mode="passthrough",
        epoch=1,
        owner=session.state.replica_id,
        upstream={"route": route.model, "url": link.url},
        key_id=session.key_id,
    )
    try:
        await store.create(record)
    except (StoreUnavailable, LeaseLost, ValueError) as exc:
        session.log.warning("passthrough_bind_failed", error=str(exc))
        return None
    return record


async def keep_binding(
    store: SessionStore, record: SessionRecord, grace_s: float, log: Logger
) -> None:
    """Keep a passthrough session's binding alive while its relay runs.

    The binding (which upstream holds the session) expires ``disconnect_grace_s``
    after its last write; a relay that outlives that would leave nothing to resume
    from. Ends when the binding moves to another connection (a resume elsewhere).
    """
    interval = min(BINDING_REFRESH_S, grace_s / 3)
    while True:
        await asyncio.sleep(interval)
        try:
            await store.append_events(record.session_id, record.epoch, [], 0)
        except StoreUnavailable:
            continue
        except LeaseLost:
            try:
                if await follows_rebind(store, record):
                    continue  # this relay's own rebind landed: its epoch taken on
                if await store.load(record.session_id) is not None:
                    return  # resumed through another connection: its relay keeps it
                await store.create(record)
                log.info("passthrough_rebound", reason="the session store had lost it")
            except (StoreUnavailable, LeaseLost):
                continue
