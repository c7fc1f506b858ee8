"""Capacity per upstream server (docs/protocol.md, "Capacity and warm-up"), against
strict stand-ins that count sessions like vLLM-Omni 0.30.0 (docs/fidelity.md, row 8):
every route to one upstream shares its slots, a session in its disconnect grace holds
its slot, a resume reuses it, the upstream's own ``resource_exhausted`` reaches the
client as ``upstream_at_capacity`` with 1013, and its limit is learned."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from proxy.config import Config, ConfigError, Route, config_from_dict
from proxy.reference.options import ReferenceOptions
from proxy.upstream import connect as connect_upstream
from proxy.upstream import resume_url
from proxy.upstream_book import upstream_key
from proxy.upstream_fresh import end_over
from tests.capacity_refusals import readyz_routes, refused_count, refused_upstream_full
from tests.servers import (
    Client,
    closed,
    connect,
    drop,
    proxy_with_state,
    reference,
    resume_of,
    serve_app,
    ws_url,
)

STRICT = ReferenceOptions(fidelity="strict")


def config(routes: list[dict[str, Any]]) -> Config:
    return config_from_dict({"auth": {"mode": "none"}, "routes": routes})


async def end(c: Client) -> None:
    """End a session for real (no grace), so that its slot is free at once."""
    await c.send({"type": "session.close"})
    await c.until("session.closed")


async def test_two_routes_on_one_upstream_share_its_one_slot() -> None:
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        routes = [{"model": "a", "upstream": up}, {"model": "b", "upstream": up}]
        async with proxy_with_state(config(routes)) as (base, state):
            async with connect(ws_url(base, model="a")) as a:
                created = await a.until("session.created")
                assert created["session"]["capabilities"]["supports_multi_session"] is False
                assert (await readyz_routes(base)) == {"a": "at_capacity", "b": "at_capacity"}
                async with connect(ws_url(base, model="b")) as b:
                    assert await closed(b) == 1013
                    error = refused_upstream_full(b)
                    assert "takes 1 session(s) at once" in error["message"]
                    assert b.ws.close_code == 1013
                # Refused before dialling: the upstream never had to say no.
                assert await refused_count(base) == 0
                await end(a)
            async with connect(ws_url(base, model="b")) as b:
                await b.until("session.created")
            assert state.upstreams.facts(upstream_key(up)).single is True


async def test_a_session_in_its_grace_holds_the_upstream_slot_and_its_resume_reuses_it() -> None:
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        routes = [{"model": "a", "upstream": up}, {"model": "b", "upstream": up}]
        async with proxy_with_state(config(routes)) as (base, _):
            async with connect(ws_url(base, model="a")) as a:
                created = await a.until("session.created")
                drop(a)  # no close frame: a hang-up would give its slot away (slot_yield.py)
            # a is in its disconnect grace: it still holds its upstream session.
            async with connect(ws_url(base, model="b")) as b:
                assert await closed(b) == 1013
                refused_upstream_full(b)
            async with connect(ws_url(base, model="a")) as again:
                await again.send(resume_of(created))
                await again.until("session.resumed")  # its own slot, not a second one
                await end(again)
            async with connect(ws_url(base, model="b")) as b:
                await b.until("session.created")
            assert await refused_count(base) == 0


async def test_the_upstreams_own_refusal_is_upstream_at_capacity_and_its_limit_is_learned() -> None:
    """Sessions the proxy cannot see (another client of the upstream) fill it: the
    upstream says resource_exhausted; the client hears upstream_at_capacity and 1013,
    and from then on the proxy refuses early at the upstream's own limit."""
    options = ReferenceOptions(fidelity="strict", max_sessions=2)
    async with reference("duplex-no-barge-in", options=options) as up:
        routes = [{"model": "m", "upstream": up, "upstream_capacity": 5}]
        async with proxy_with_state(config(routes)) as (base, state):
            direct = f"{up}?duplex=1&model=m"
            async with connect(direct) as d1, connect(direct) as d2:
                await d1.until("session.created")
                await d2.until("session.created")
                async with connect(ws_url(base)) as c:
                    assert await closed(c) == 1013
                    error = refused_upstream_full(c)
                    assert "2 session(s) at once" in error["message"]
                assert await refused_count(base) == 1
                assert state.upstreams.facts(upstream_key(up)).limit == 2
                await end(d1)
                await end(d2)
            async with connect(ws_url(base)) as c1, connect(ws_url(base)) as c2:
                await c1.until("session.created")
                await c2.until("session.created")
                async with connect(ws_url(base)) as c3:
                    assert await closed(c3) == 1013
                    error = refused_upstream_full(c3)
                    assert "takes 2 session(s) at once" in error["message"]
                assert await refused_count(base) == 1, "refused early, at the learned limit"
                await end(c1)
                await end(c2)


class ResumeRefusingRelay:
    """A WebSocket relay in front of a backend that answers every ``session.resume``
    as vLLM-Omni does on a journal gap (``session.resync_required``) while the backend
    keeps the session in its disconnect grace, holding its slot; ``cut`` drops every
    relayed connection as a network failure would."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.pairs: list[tuple[web.WebSocketResponse, aiohttp.ClientWebSocketResponse]] = []
        self.resumes_refused = 0
        self.exhausted = 0

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        first = await ws.receive()
        event = json.loads(first.data)
        if event.get("type") == "session.resume":
            self.resumes_refused += 1
            await ws.send_json(
                {
                    "type": "session.resync_required",
                    "event_id": "evt_relay",
                    "session_id": event["session_id"],
                    "reason": "journal_gap",
                }
            )
            await ws.close()
            return ws
        url = f"{self.target}?{request.query_string}"
        async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as up:
            self.pairs.append((ws, up))
            await up.send_str(first.data)

            async def down() -> None:
                async for msg in up:
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        if '"resource_exhausted"' in msg.data:
                            self.exhausted += 1
                        await ws.send_str(msg.data)

            async def upward() -> None:
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        await up.send_str(msg.data)

            tasks = [asyncio.ensure_future(down()), asyncio.ensure_future(upward())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await ws.close()
        return ws

    async def cut(self) -> None:
        pairs, self.pairs = self.pairs, []
        for ws, up in pairs:
            await up.close()  # the backend sees its socket go: the session's grace begins
            await ws.close(code=1011, message=b"network down")


async def test_a_fresh_upstream_session_after_a_failed_resume_waits_for_the_old_ones_slot() -> None:
    """The upstream socket drops and the upstream refuses to resume its session, which
    it keeps in its grace: the fresh session the proxy opens instead must not fail on
    that session's slot (the strict stand-in takes one session)."""
    options = ReferenceOptions(fidelity="strict", disconnect_grace_s=3)
    async with reference("duplex-no-barge-in", options=options) as up:
        relay = ResumeRefusingRelay(up)
        app = web.Application()
        app.router.add_get("/v1/realtime", relay.handle)
        async with serve_app(app) as relay_base:
            relay_url = relay_base.replace("http://", "ws://") + "/v1/realtime"
            async with (
                proxy_with_state(config([{"model": "m", "upstream": relay_url}])) as (base, _),
                connect(ws_url(base)) as c,
            ):
                await c.until("session.created")
                await relay.cut()
                # The session goes on over a fresh upstream session once the old one's
                # grace has freed its slot: it answers a session.update.
                await asyncio.sleep(0.2)
                await c.send({"type": "session.update", "session": {"instructions": "go on"}})
                async with asyncio.timeout(30):
                    while (await c.until("session.updated"))["session"].get("instructions") != (
                        "go on"
                    ):
                        pass
                assert relay.resumes_refused == 1
                assert relay.exhausted >= 1, "the old session held the slot for a while"
                assert [e for e in c.of("error")] == []
                await end(c)


async def test_a_passthrough_session_in_the_upstreams_grace_is_refused_by_it_as_coded() -> None:
    """A passthrough session whose client left waits in the upstream's own grace (the
    proxy relays its resume): the upstream refuses the next open, and the client hears
    upstream_at_capacity and 1013, not upstream_unavailable; the resume gets it back."""
    async with reference("duplex", options=STRICT) as up:
        async with proxy_with_state(config([{"model": "m", "upstream": up}])) as (base, _):
            async with connect(ws_url(base, duplex="1")) as a:
                created = await a.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
            async with connect(ws_url(base, duplex="1")) as b:
                assert await closed(b) == 1013
                error = refused_upstream_full(b)
                assert "at capacity (1 session(s) at once)" in error["message"]
            assert await refused_count(base) == 1
            async with connect(ws_url(base, duplex="1")) as again:
                await again.send(resume_of(created))
                await again.until("session.resumed")
                async with connect(ws_url(base, duplex="1")) as b:  # counted again: refused early
                    assert await closed(b) == 1013
                    assert "takes 1 session(s) at once" in refused_upstream_full(b)["message"]
                assert await refused_count(base) == 1
                await end(again)
            async with connect(ws_url(base, duplex="1")) as c:
                await c.until("session.created")
                await end(c)


def test_routes_to_one_upstream_server_must_agree_on_its_capacity() -> None:
    routes = [
        {"model": "a", "upstream": "ws://gpu-1:8000/v1/realtime", "upstream_capacity": 1},
        {"model": "b", "upstream": "ws://GPU-1:8000/v1/duplex", "upstream_capacity": 2},
        {"model": "c", "upstream": "ws://gpu-2:8000/v1/realtime", "upstream_capacity": 2},
    ]
    with pytest.raises(ConfigError, match=r"routes\.1\.upstream_capacity: 2, but routes\.0"):
        config(routes)
    routes[1]["upstream_capacity"] = 1
    assert len(config(routes).routes) == 3


async def test_end_over_ends_a_lost_upstream_session_and_frees_its_slot() -> None:
    """What a takeover does with an upstream session it will not use (the client is
    ahead of the snapshot): resume it, close it; the one slot is free again."""
    async with reference("duplex-no-barge-in", options=STRICT) as up:
        direct = f"{up}?duplex=1&model=m"
        async with connect(direct) as old:
            created = await old.until("session.created")
            last = max((e.get("server_event_seq", 0) for e in old.events), default=0)
        # Its socket dropped: the session waits in its grace, holding the slot.
        async with connect(direct) as refused:
            assert (await refused.until("error"))["error"]["code"] == "resource_exhausted"
        async with aiohttp.ClientSession() as http:
            url = resume_url(up, "m")
            ws = await connect_upstream(http, url, Route(model="m", upstream=up), 5.0)
            sid, token = created["session"]["id"], created["resume_token"]
            assert await end_over(ws, url, sid, token, last, 5.0)
        async with connect(direct) as fresh:
            await fresh.until("session.created")
