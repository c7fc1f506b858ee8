"""A passthrough resume that rotated no token takes its rebind mark away
(``proxy/passthrough/rebind.py``, ``unmark``).

Before a resume is relayed, the binding is marked: a resume meanwhile whose token
does not match is told to try again (``session_resume_unavailable``), since the
upstream may be rotating the token to one the store does not know yet. A resume the
upstream refused, or did not answer, left that mark standing until it expired: every
wrong token was told to try again instead of being denied, and the store said a
rebind was in flight when none was. Now the resume takes its own mark away, and only
its own: that of another resume relayed meanwhile (another replica's) stands.

Real parts on loopback: the proxy (replicas "a" and "b" sharing a redis-server, or
one replica on the memory store) in front of the duplex reference backend, on a
route set to ``passthrough``; to fail the upstream, a TCP relay in front of it that
is pointed at a server that takes the socket and answers nothing, or drops it.
"""

from __future__ import annotations

import secrets
import time

import pytest
from aiohttp import web

from proxy.config import StoreConfig
from proxy.store.base import LeaseLost, SessionStore, StoreUnavailable, hash_token
from tests.passthrough_resume_stack import (
    DENIED,
    FAR,
    TRY_AGAIN,
    opened,
    refused,
    replicas_before,
    resumed,
    store_url,
    until,
)
from tests.servers import (
    connect,
    host_port,
    reference,
    serve_app,
    tcp_link,
    ws_url,
)
from tests.stores import new_record, opened_store

__all__ = ["store_url"]  # the fixture, used by name


async def marks(store: SessionStore, sid: str) -> tuple[int, dict[str, int]]:
    record = await store.load(sid)
    assert record is not None
    return record.rebind_until_ms, record.rebind_marks


async def closed_upstream(base: str) -> tuple[str, str]:
    """A passthrough session its client closed (``session.close``, the upstream ends
    it); its id and token, the binding left in the store."""
    async with connect(ws_url(base, duplex="1")) as c:
        created = await c.until("session.created")
        await c.send({"type": "session.close"})
        await c.until("session.closed")
        return created["session"]["id"], created["resume_token"]


@pytest.mark.parametrize("other", [False, True], ids=["alone", "another_resume_marked"])
async def test_a_resume_the_upstream_refused_takes_its_mark_away(
    store_url: str, other: bool
) -> None:
    async with reference("duplex") as up, replicas_before(up, store_url) as group:
        (a, state), (b, _) = group[0], group[-1]
        store = state.store
        assert store is not None
        sid, token = await closed_upstream(a)
        if other:  # another resume, relayed meanwhile (another replica's), still out
            now = round(time.time() * 1000)
            assert await store.rebind_mark(sid, 1, "theirs", FAR, now) == FAR
        # The upstream ended the session: it refuses the resume, rotating nothing.
        assert (await refused(b, sid, token))[0] == "session_resume_expired"
        wrong = secrets.token_urlsafe(32)
        if not other:
            assert await marks(store, sid) == (0, {}), "no rebind in flight"
            assert await refused(a, sid, wrong) == DENIED
            return
        # Only this resume's own mark went: the other's still holds.
        assert await marks(store, sid) == (FAR, {"theirs": FAR})
        assert await refused(a, sid, wrong) == TRY_AGAIN
        now = round(time.time() * 1000)
        assert await store.rebind_mark(sid, 1, "theirs", 0, now) == 0
        assert await refused(a, sid, wrong) == DENIED


async def test_a_mark_the_store_did_not_take_away_at_once_goes_when_it_does(
    store_url: str,
) -> None:
    async with reference("duplex") as up, replicas_before(up, store_url) as group:
        (a, state), (b, _) = group[0], group[-1]
        store = state.store
        assert store is not None
        sid, token = await closed_upstream(a)
        real, refusals = store.rebind_mark, []

        async def slow(sid: str, epoch: int, mark: str, until_ms: int, now_ms: int) -> int:
            if until_ms == 0 and not refusals:  # the first try to take a mark away
                refusals.append(mark)
                raise StoreUnavailable("rebind_mark: no answer in time")
            return await real(sid, epoch, mark, until_ms, now_ms)

        store.rebind_mark = slow  # type: ignore[method-assign]
        assert (await refused(a, sid, token))[0] == "session_resume_expired"
        assert len(refusals) == 1
        await until(lambda: marks(store, sid), (0, {}))
        assert await refused(b, sid, secrets.token_urlsafe(32)) == DENIED


async def silent_upstream(drops: bool) -> web.Application:
    """Takes a socket and then answers nothing (or drops it at its first frame)."""

    async def realtime(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for _ in ws:
            if drops:
                assert request.transport is not None
                request.transport.abort()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", realtime)
    return app


@pytest.mark.parametrize("drops", [False, True], ids=["no_answer", "dropped"])
async def test_a_resume_the_upstream_did_not_answer_takes_its_mark_away(
    store_url: str, drops: bool
) -> None:
    async with (
        reference("duplex") as up,
        tcp_link(up) as link,
        serve_app(await silent_upstream(drops)) as silent,
        replicas_before(link.url(up), store_url, {"classify_timeout_s": 1.0}) as group,
    ):
        (a, state), (b, _) = group[0], group[-1]
        store = state.store
        assert store is not None
        sid, token = await opened(a)
        backend, link.target = link.target, host_port(silent)
        # Told to try again later (close 1013): the session is where it was.
        assert await refused(b, sid, token) == ("upstream_unavailable", 1013)
        assert await marks(store, sid) == (0, {}), "no rebind in flight"
        assert await refused(a, sid, secrets.token_urlsafe(32)) == DENIED
        # The upstream never saw the resume: the client's token still resumes there.
        link.target = backend
        await resumed(b, sid, token)


async def test_the_store_keeps_each_resumes_mark_apart(store_url: str) -> None:
    """``SessionStore.rebind_mark``: each mark is set and taken away on its own, the
    latest standing is ``rebind_until_ms``; fenced by the epoch; a rebind clears all."""
    async with opened_store(StoreConfig(url=store_url)) as store:
        old, new = (hash_token(secrets.token_urlsafe(16)) for _ in range(2))
        record = new_record(token_hash=old, mode="passthrough", epoch=1)
        await store.create(record)
        sid, now = record.session_id, round(time.time() * 1000)
        assert await store.rebind_mark(sid, 1, "x", now + 60_000, now) == now + 60_000
        assert await store.rebind_mark(sid, 1, "y", now + 30_000, now) == now + 60_000
        assert await store.rebind_mark(sid, 1, "x", 0, now) == now + 30_000, "y stands"
        assert await marks(store, sid) == (now + 30_000, {"y": now + 30_000})
        # A mark past its end is gone with the next write.
        assert await store.rebind_mark(sid, 1, "z", now + 5, now) == now + 30_000
        assert await store.rebind_mark(sid, 1, "y", 0, now + 10) == 0
        assert await marks(store, sid) == (0, {})
        assert await store.rebind_mark(sid, 1, "x", now + 60_000, now) == now + 60_000
        assert await store.rebind(sid, "b", old, new) == 2
        assert await marks(store, sid) == (0, {}), "a rebind clears every mark"
        with pytest.raises(LeaseLost):  # a resume marked at the epoch before
            await store.rebind_mark(sid, 1, "x", 0, now)
        with pytest.raises(LeaseLost):
            await store.rebind_mark("sess_" + secrets.token_hex(8), 1, "x", 0, now)
