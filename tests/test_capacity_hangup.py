"""A session whose client hung up (its own close frame, 1000 or 1001) gives its slot to a
new session that needs it (``proxy/emulated/slot_yield.py``; docs/protocol.md,
"Capacity and warm-up"): an Agents SDK client ends a call and calls again at once over
an upstream that serves one session, as vLLM-Omni does by default. A session whose
connection dropped (no close frame) keeps its slot for its grace, for the resume its
client is likely to send; a hung-up one nobody needs stays resumable."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from proxy.config import Config, config_from_dict
from proxy.emulated.runner import EmulatedRunner
from proxy.reference.options import ReferenceOptions
from proxy.state import ProxyState
from tests.capacity_refusals import readyz_routes, refused_count, refused_upstream_full
from tests.servers import closed, connect, drop, proxy_with_state, reference, resume_of, ws_url

STRICT = ReferenceOptions(fidelity="strict")


def config(up: str) -> Config:
    routes = [{"model": "a", "upstream": up}, {"model": "b", "upstream": up}]
    return config_from_dict({"auth": {"mode": "none"}, "routes": routes})


async def detached(state: ProxyState) -> None:
    """Until every live session has lost its client (the proxy has read the close)."""
    for _ in range(500):
        runners = [r for r in state.live.values() if isinstance(r, EmulatedRunner)]
        if runners and all(r.out.attached is None for r in runners):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the session never saw its client leave")


@pytest.mark.parametrize(("leave", "after"), [("hang up", "ok"), ("drop", "at_capacity")])
async def test_readyz_counts_a_hung_up_session_as_room(leave: str, after: str) -> None:
    """/readyz says what a new session would meet: a hung-up session's slot is taken by
    the next call, so the route is ready; a dropped one's is kept for its resume."""
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        async with proxy_with_state(config(up)) as (base, state):
            async with connect(ws_url(base, model="a")) as first:
                await first.until("session.created")
                assert await readyz_routes(base) == {"a": "at_capacity", "b": "at_capacity"}
                if leave == "drop":
                    drop(first)
                else:
                    await first.ws.close(code=1000)
            await detached(state)
            assert await readyz_routes(base) == {"a": after, "b": after}
            assert len(state.live) == 1, "still resumable either way"


@pytest.mark.parametrize("goodbye", [1000, 1001])
async def test_a_hung_up_session_gives_its_upstream_slot_to_the_next_call(goodbye: int) -> None:
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        async with proxy_with_state(config(up)) as (base, state):
            async with connect(ws_url(base, model="a")) as first:
                created = await first.until("session.created")
                await first.ws.close(code=goodbye)
            async with connect(ws_url(base, model="b")) as second:
                await second.until("session.created")  # not upstream_at_capacity
                assert not second.of("error"), second.of("error")
                await second.send({"type": "session.update", "session": {"instructions": "x"}})
                await second.until("session.updated")
            assert len(state.live) == 1, "the hung-up session ended"
            async with connect(ws_url(base, model="a")) as again:
                await again.send(resume_of(created))
                error = await again.until("error")
                assert error["error"]["code"] == "session_resume_expired", error
            assert await refused_count(base) == 0  # the upstream never had to say no


async def test_a_hung_up_session_nobody_needs_is_still_resumed() -> None:
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        async with proxy_with_state(config(up)) as (base, _):
            async with connect(ws_url(base, model="a")) as first:
                created = await first.until("session.created")
            async with connect(ws_url(base, model="a")) as again:
                await again.send(resume_of(created))
                await again.until("session.resumed")


async def test_a_dropped_session_keeps_its_slot_for_its_resume() -> None:
    """(Also ``test_capacity.py``, across two routes.)"""
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        async with proxy_with_state(config(up)) as (base, _):
            async with connect(ws_url(base, model="a")) as first:
                created = await first.until("session.created")
                drop(first)
            async with connect(ws_url(base, model="b")) as second:
                assert await closed(second) == 1013
                refused_upstream_full(second)
            async with connect(ws_url(base, model="a")) as again:
                await again.send(resume_of(created))
                await again.until("session.resumed")  # its own upstream session, kept


@pytest.mark.parametrize(
    ("route", "server"), [({"max_sessions": 1}, {}), ({}, {"max_sessions": 1})]
)
async def test_a_hung_up_session_gives_its_route_or_replica_slot_too(
    route: dict[str, Any], server: dict[str, Any]
) -> None:
    async with reference("duplex-no-barge-in") as up:
        cfg = config_from_dict(
            {
                "server": server,
                "auth": {"mode": "none"},
                "routes": [{"model": "m", "upstream": up, "upstream_capacity": 0, **route}],
            }
        )
        async with proxy_with_state(cfg) as (base, state):
            async with connect(ws_url(base)) as first:
                await first.until("session.created")
            async with connect(ws_url(base)) as second:
                await second.until("session.created")  # not server_at_capacity
                assert not second.of("error"), second.of("error")
                assert len(state.live) == 1
