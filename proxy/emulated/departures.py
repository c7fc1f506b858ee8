"""How an emulated session's client leaves, and what the session does then.

A connection the proxy ended itself (idle, too long, too fast) ends the session: there
is nothing to resume. A client that leaves otherwise leaves the session waiting
``store.disconnect_grace_s`` for a resume, its upstream session attached. One that
hung up (its own close frame, 1000 or 1001, where a dropped connection's socket just
ends) leaves it *parked*: still resumable, but a new session refused for want of its
slot takes it (``slot_yield.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol

from proxy.client_io import ClientChannel
from proxy.clock import now_ms
from proxy.emulated.attachments import Attachments
from proxy.emulated.client_side import ClientSide
from proxy.emulated.queue_items import Stop
from proxy.emulated.ticker import Ticker
from proxy.logging import Logger
from proxy.persist.persister import Persister
from proxy.state import ProxyState
from shim.inputs import ClientPresence, Input


class Leaving(Protocol):
    """The session as its client's departure sees it (``EmulatedRunner``)."""

    state: ProxyState
    session_id: str
    out: ClientSide
    persister: Persister
    ticker: Ticker
    inputs: asyncio.Queue[object]
    log: Logger
    attachments: Attachments
    finished: asyncio.Event
    close_reason: str | None
    parked_at: float | None

    async def handle(self, event: Input) -> None: ...


async def on_detach(r: Leaving, client: ClientChannel) -> None:
    """The client connection ``client`` ended (the loop's ``Detached``)."""
    if client.ended_by_proxy is not None and client is r.out.client:
        # Idle, too long or too fast: the session ends, with nothing to resume.
        r.log.info("session_ended_by_proxy", reason=client.ended_by_proxy)
        await close_by_client(r, client.ended_by_proxy)
        return
    grace_s = r.state.config.store.disconnect_grace_s
    if r.out.detach(client, grace_s):
        await r.handle(ClientPresence(False, now_ms()))  # no idle timeout meanwhile
        r.persister.flush_now()  # a resume elsewhere finds all the client received
        r.ticker.wake_in(grace_s)  # the loop sees the grace end, with no ticks
        r.parked_at = time.monotonic() if client.said_goodbye else None
        r.log.info("client_detached", grace_s=grace_s, hung_up=client.said_goodbye)


async def close_by_client(r: Leaving, reason: str) -> None:
    """The client ends the session: no grace, nothing to resume."""
    r.persister.enabled = False
    with contextlib.suppress(Exception):
        if r.state.store is not None:
            await r.state.store.delete(r.session_id, r.persister.epoch)
    r.close_reason = reason
    await r.inputs.put(Stop())


def parked(r: Leaving) -> bool:
    """Its client hung up and no resume is on its way in: its slot may be taken."""
    if r.parked_at is None or r.out.attached is not None:
        return False
    return r.attachments.end is None and not r.attachments.pending()


async def yield_slot(r: Leaving, within_s: float = 5.0) -> None:
    """A new session needs its slot: it ends now, its upstream session too; a resume of
    it is then refused as for any session that ended."""
    r.parked_at = None
    await close_by_client(r, "slot_yielded")
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within_s):
            await r.finished.wait()
