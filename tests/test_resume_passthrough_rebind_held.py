"""A passthrough rebind the store refuses for longer than ``disconnect_grace_s`` while
the resumed client stays connected (``proxy/passthrough/rebind.py``).

The background rebind gave up ``disconnect_grace_s`` after the resume, taking the
record to have expired by then. But the resumed client's relay keeps the binding
alive (``proxy/passthrough/binding.py``, at the epoch before the rebind), so a store
that refused only the rebind that long (a Redis that errors or times out that one
script) left the record alive with the old hash once it healed: the client's next
resume, with the token it was told, could never land. And the resume's mark lapsed
with the grace and the classify timeout, so that resume was even denied, telling the
client its session was gone. Now the rebind is retried while the relay that owns it
runs, and ``disconnect_grace_s`` after it ends, its mark held as long; a token that
is not the session's is still never let through.

Real parts on loopback: the proxy (replicas "a" and "b" sharing a redis-server, or
one replica on the memory store) in front of the duplex reference backend, on a
route set to ``passthrough``; replica "a"'s store refusing its rebind writes (as in
tests/test_resume_passthrough_rebind.py) and nothing else.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from proxy.metrics import Metrics
from proxy.store.base import SessionStore, hash_token
from tests.passthrough_resume_stack import (
    DENIED,
    TRY_AGAIN,
    Fault,
    opened,
    refused,
    replicas_before,
    resume,
    resumed,
    store_url,
    stored_hash,
    until,
)
from tests.servers import connect, reference, ws_url

__all__ = ["store_url"]  # the fixture, used by name

GRACE_S = 4.0  # the store's disconnect_grace_s (the shortest for a timeout_s of 1 s)
CLASSIFY_S = 1.0  # a resume's mark holds GRACE_S + CLASSIFY_S from when it is set


@asynccontextmanager
async def held_replicas(
    store_url: str,
) -> AsyncIterator[tuple[str, str, SessionStore, Metrics]]:
    """Replicas "a" and "b" (one on the memory store) in front of a duplex backend, the
    grace and classify timeout above; their base URLs, "a"'s store and its metrics."""
    async with (
        reference("duplex") as up,
        replicas_before(
            up,
            store_url,
            {"classify_timeout_s": CLASSIFY_S},
            disconnect_grace_s=GRACE_S,
            rebind_wait_s=0.2,
        ) as group,
    ):
        (a, state), (b, _) = group[0], group[-1]
        assert state.store is not None
        yield a, b, state.store, state.metrics


async def rebinds(metrics: Metrics) -> dict[str, float]:
    """``duplex_proxy_passthrough_rebinds_total`` by outcome, those counted (a coroutine,
    for ``until``)."""
    name = "duplex_proxy_passthrough_rebinds_total"
    outcomes = ("landed", "landed_late", "failed", "superseded")
    counts = {o: metrics.registry.get_sample_value(name, {"outcome": o}) for o in outcomes}
    return {o: n for o, n in counts.items() if n}


async def test_a_rebind_refused_past_the_grace_lands_once_the_store_takes_it(
    store_url: str,
) -> None:
    async with held_replicas(store_url) as (a, b, store, metrics):
        sid, first = await opened(a)
        fault = Fault(store, applied=False)  # every rebind of "a" refused until healed
        async with connect(ws_url(a, model=None)) as c2:
            answer = await resume(c2, sid, first)
            assert answer["type"] == "session.resumed", answer
            token = answer["resume_token"]
            # Connected past the grace and past the mark's first hold, the store
            # refusing the rebind all along.
            await asyncio.sleep(GRACE_S + CLASSIFY_S + 1.0)
            assert fault.refused >= 2
            assert await stored_hash(store, sid) == hash_token(first), "kept alive, old hash"
            # A resume meanwhile is still told to try again, not told the session is
            # gone; a token not the session's is not let through either.
            assert await refused(b, sid, token) == TRY_AGAIN
            assert await refused(b, sid, secrets.token_urlsafe(32)) == TRY_AGAIN
        # The client left; the store still refuses for a while: the same.
        await asyncio.sleep(0.5)
        assert await refused(b, sid, token) == TRY_AGAIN
        fault.heal()
        await until(lambda: stored_hash(store, sid), hash_token(token))
        await until(lambda: rebinds(metrics), {"landed_late": 1})
        # The client, trying again as told, resumes with the token it holds.
        latest = await resumed(b, sid, token)
        for stale in (first, token, secrets.token_urlsafe(32)):
            assert await refused(a, sid, stale) == DENIED
        await resumed(a, sid, latest)


async def test_a_rebind_that_landed_unanswered_is_not_marked_again(store_url: str) -> None:
    """The store took the rebind but its answers were lost for a while, the resumed
    client still connected. The relay's binding keeper found the new hash and took on
    the new epoch (``follows_rebind``); the rebind's retries held its mark at that
    epoch, putting back the mark the rebind had cleared: a token not the session's
    was told to try again, not denied, for a mark's whole hold after the store healed.
    A mark is held at the epoch it was set at, which the rebind moved on from."""
    async with held_replicas(store_url) as (a, b, store, metrics):
        sid, first = await opened(a)
        fault = Fault(store, applied=True)  # every rebind of "a" lands, unanswered
        async with connect(ws_url(a, model=None)) as c2:
            answer = await resume(c2, sid, first)
            assert answer["type"] == "session.resumed", answer
            token = answer["resume_token"]
            # Past the keeper's first refresh and half the mark's hold.
            await asyncio.sleep((GRACE_S + CLASSIFY_S) / 2 + 1.0)
            assert fault.refused >= 2
            assert await stored_hash(store, sid) == hash_token(token)
            fault.heal()
            await asyncio.sleep(1.5)  # the rebind's next try, answered
            record = await store.load(sid)
            assert record is not None
            assert (record.rebind_until_ms, record.rebind_marks) == (0, {})
            assert await refused(b, sid, secrets.token_urlsafe(32)) == DENIED
            await until(lambda: rebinds(metrics), {"landed_late": 1})


async def test_a_rebind_refused_past_the_grace_after_the_client_left_is_counted_failed(
    store_url: str,
) -> None:
    """The client left at once and the store refused the rebind for longer than the
    grace: the session cannot be resumed through the proxy again, which operators see
    as a count, not only a log line. A rebind that lands at once is counted too."""
    async with held_replicas(store_url) as (a, _b, store, metrics):
        sid, first = await opened(a)
        token = await resumed(a, sid, first)
        await until(lambda: rebinds(metrics), {"landed": 1})
        fault = Fault(store, applied=False)
        async with connect(ws_url(a, model=None)) as c2:
            answer = await resume(c2, sid, token)
            assert answer["type"] == "session.resumed", answer
        assert await rebinds(metrics) == {"landed": 1}  # still being tried
        await asyncio.sleep(GRACE_S + 1.0)
        assert fault.refused >= 2
        await until(lambda: rebinds(metrics), {"landed": 1, "failed": 1})
