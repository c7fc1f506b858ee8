"""A passthrough resume whose rebind the store did not answer (docs/protocol.md,
"Resume"; ``proxy/passthrough/rebind.py``).

The upstream rotates its resume token on every resume; the proxy lets a resume
through only if its token matches the hash in the store. Where the write of the
rotated token's hash went unanswered, the client was left holding a token the store
did not know (denied) while the upstream refused its previous one: the session was
lost. Now the write is retried, before the client is told the token and after, and a
resume meanwhile is told to try again (``session_resume_unavailable``), not denied;
a token that is not the session's is never let through.

Real parts on loopback: the proxy (replicas "a" and "b" sharing a redis-server, or
one replica on the memory store) in front of the duplex reference backend run as its
own process, on a route set to ``passthrough``. One store write is made to go
unanswered, applied or not, as in tests/test_resume_rotate_unanswered.py.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from proxy.config import StoreConfig
from proxy.state import ProxyState
from proxy.store.base import LeaseLost, hash_token
from tests.passthrough_resume_stack import (
    Fault,
    has_id,
    opened,
    refused,
    replicas_before,
    resume,
    resumed,
    store_url,
    stored_hash,
    until,
)
from tests.proxy_process import backend_process
from tests.servers import connect, ws_url
from tests.stores import new_record, opened_store

__all__ = ["store_url"]  # the fixture, used by name


@asynccontextmanager
async def replicas(
    tmp_path: Path, store_url: str, names: tuple[str, ...], **store: Any
) -> AsyncIterator[list[tuple[str, ProxyState]]]:
    """Replicas ``names`` on one store, a passthrough route to a reference backend
    process; each one's base URL and state."""
    async with backend_process(tmp_path, "up", "duplex") as (_, port):
        upstream = f"ws://127.0.0.1:{port}/v1/realtime"
        async with replicas_before(upstream, store_url, names=names, **store) as out:
            yield out


@pytest.mark.parametrize("applied", [False, True], ids=["lost", "applied"])
async def test_a_rebind_left_unanswered_once_still_binds_the_token_the_client_holds(
    tmp_path: Path, store_url: str, applied: bool
) -> None:
    names = ("a",) if store_url.startswith("memory") else ("a", "b")
    async with replicas(tmp_path, store_url, names) as group:
        (a, state), (b, _) = group[0], group[-1]
        assert state.store is not None
        sid, first = await opened(a)
        fault = Fault(state.store, applied=applied, once=1)
        token = await resumed(a, sid, first)
        assert fault.refused == 1, "the rebind went unanswered"
        # The token the client was told resumes the session, on any replica: the
        # store knew its hash before the client knew the token.
        latest = await resumed(b, sid, token)
        # The tokens the upstream rotated away from, and anyone else's, do not.
        for stale in (first, token, secrets.token_urlsafe(32)):
            assert await refused(a, sid, stale) == ("session_resume_denied", 1008)
        await resumed(a, sid, latest)


async def test_a_store_that_takes_no_rebind_for_a_while_loses_no_session(
    tmp_path: Path, store_url: str
) -> None:
    names = ("a",) if store_url.startswith("memory") else ("a", "b")
    async with replicas(tmp_path, store_url, names, rebind_wait_s=0.2) as group:
        (a, state), (b, _) = group[0], group[-1]
        store = state.store
        assert store is not None
        sid, first = await opened(a)
        fault = Fault(store, applied=False)
        async with connect(ws_url(a, model=None)) as c2:
            answer = await resume(c2, sid, first)
            # Answered past rebind_wait_s, the store still taking no rebind.
            assert answer["type"] == "session.resumed", answer
            token = answer["resume_token"]
            assert fault.refused >= 1
            assert await stored_hash(store, sid) != hash_token(token)
            # A resume meanwhile is told to try again: neither the client's token
            # nor anyone else's is let through, and none is told it is lost.
            try_again = ("session_resume_unavailable", 1013)
            assert await refused(b, sid, token) == try_again
            assert await refused(b, sid, secrets.token_urlsafe(32)) == try_again
            assert await refused(b, sid, first) == ("session_resume_denied", 1008)
            fault.heal()
            await until(lambda: stored_hash(store, sid), hash_token(token))
            # The live relay writes on at the epoch its rebind moved to.
            event_id = "evt_" + secrets.token_hex(6)
            await c2.send({"type": "session.update", "event_id": event_id, "session": {}})
            await c2.until("session.updated")
            await until(lambda: has_id(store, sid, event_id), True)
        # The client, trying again as told, resumes with the token it holds.
        token = await resumed(b, sid, token)
        assert await refused(a, sid, secrets.token_urlsafe(32)) == (
            "session_resume_denied",
            1008,
        )
        await resumed(a, sid, token)


async def test_the_store_rebinds_only_from_the_hash_matched_and_once(store_url: str) -> None:
    """``SessionStore.rebind``: the lease and the hash move together and clear the mark;
    a retry of a write that landed finds it landed; any other hash is another resume's."""
    async with opened_store(StoreConfig(url=store_url)) as store:
        old, new, other = (hash_token(secrets.token_urlsafe(16)) for _ in range(3))
        record = new_record(token_hash=old, mode="passthrough", epoch=1)
        await store.create(record)
        sid = record.session_id
        await store.update(sid, 1, {"rebind_until_ms": 2**52})
        assert await store.rebind(sid, "b", old, new) == 2
        stored = await store.load(sid)
        assert stored is not None
        assert (stored.epoch, stored.owner, stored.token_hash) == (2, "b", new)
        assert stored.rebind_until_ms == 0, "the mark is cleared"
        assert await store.rebind(sid, "b", old, new) == 2, "landed already: unchanged"
        with pytest.raises(LeaseLost):
            await store.rebind(sid, "c", other, hash_token("x"))
        with pytest.raises(LeaseLost):
            await store.append_events(sid, 1, [], 0)  # the replaced relay is fenced out
        with pytest.raises(LeaseLost):
            await store.rebind("sess_" + secrets.token_hex(8), "b", old, new)
