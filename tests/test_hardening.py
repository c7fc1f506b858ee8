"""What one client, one hung upstream or many sessions may cost the proxy, bounded
(docs/protocol.md): capacity counted in sessions, upstream heartbeats, 1009 with a
reason, no internal address in a client's error, idle and lifetime limits, no
timer ticking in an idle session, no connector limit on upstream sockets; a lost
upstream tried again within bounds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from proxy.config import config_from_dict
from proxy.config_redial import RedialConfig
from proxy.emulated.runner import EmulatedRunner
from proxy.emulated.upstream_redial import Outbox, retrying
from proxy.reference.options import ReferenceOptions
from proxy.upstream import UpstreamRefused, UpstreamUnavailable
from tests.ports import closed_port
from tests.servers import (
    Client,
    closed,
    connect,
    drop,
    proxy,
    proxy_config,
    proxy_with_state,
    reference,
    resume_of,
    serve_app,
    ws_url,
)

KINDS = ["duplex", "duplex-no-barge-in", "turn"]


async def eventually(condition: Callable[[], bool], within_s: float = 5.0) -> None:
    for _ in range(int(within_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    assert condition()


def codes(c: Client) -> list[str]:
    return [e["error"]["code"] for e in c.of("error")]


# ---------------------------------------------------------------- capacity


@pytest.mark.parametrize("kind", KINDS)
async def test_hundreds_of_concurrent_sessions_open_in_every_mode(kind: str) -> None:
    """Past aiohttp's default connector limit (100 sockets), to an upstream deployed
    with room for them all (vLLM-Omni's own default is one session)."""
    n = 310
    async with (
        reference(kind, options=ReferenceOptions(max_sessions=n)) as upstream,
        proxy(proxy_config({"m": upstream}, server={"upstream_connect_timeout_s": 20})) as base,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http,
    ):
        sockets = await asyncio.gather(*(http.ws_connect(ws_url(base)) for _ in range(n)))
        try:

            async def first(ws: aiohttp.ClientWebSocketResponse) -> str:
                msg = await ws.receive(timeout=60)
                return str(json.loads(msg.data)["type"])

            firsts = await asyncio.gather(*(first(ws) for ws in sockets))
            assert firsts.count("session.created") == n, sorted(set(firsts))
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets))


@pytest.mark.parametrize(
    ("route", "server"), [({"max_sessions": 1}, {}), ({}, {"max_sessions": 1})]
)
async def test_a_session_in_its_grace_holds_its_slot_and_a_resume_reuses_it(
    route: dict[str, Any], server: dict[str, Any]
) -> None:
    async with reference("duplex-no-barge-in") as upstream:
        cfg = config_from_dict(
            {
                "server": server,
                "auth": {"mode": "none"},
                "routes": [{"model": "m", "upstream": upstream, **route}],
            }
        )
        async with proxy(cfg) as base:
            async with connect(ws_url(base)) as a:
                created = await a.until("session.created")
                drop(a)  # no close frame: a hang-up would give its slot away (slot_yield.py)
            # a is in its disconnect grace: it still holds its upstream session.
            async with connect(ws_url(base)) as b:
                assert await closed(b) == 1013
                assert codes(b) == ["server_at_capacity"]
                assert "retry after" in b.of("error")[0]["error"]["message"]
                assert b.ws.close_code == 1013
            async with connect(ws_url(base)) as again:
                await again.send(resume_of(created))
                first = await again.recv()
                assert first["type"] == "session.resumed", first


# ---------------------------------------------------------------- upstream


@asynccontextmanager
async def silent_upstream(created: dict[str, Any]) -> AsyncIterator[tuple[str, list[int]]]:
    """Answers the first connection with ``created``, then neither reads nor answers
    pings; refuses every later connection. Yields its URL and a connection count."""
    seen: list[int] = []
    hold = asyncio.Event()

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=False)
        await ws.prepare(request)
        seen.append(1)
        if len(seen) > 1:
            await ws.close(code=1013, message=b"no")
            return ws
        await ws.send_str(json.dumps(created))
        await hold.wait()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        try:
            yield base.replace("http://", "ws://") + "/v1/realtime", seen
        finally:
            hold.set()


# A lost upstream is tried again this often ([redial]), quickly, before the session ends.
REDIAL_TWICE = {"attempts": 2, "backoff_s": 0.05}
DUPLEX_CREATED = {
    "type": "session.created",
    "session": {"id": "up_1", "capabilities": {"supports_barge_in": True}},
}
NO_BARGE_IN_CREATED = {
    "type": "session.created",
    "session": {"id": "up_1", "capabilities": {"supports_barge_in": False}},
}
TURN_CREATED = {"type": "session.created", "id": "up_1", "created": 0}


@pytest.mark.parametrize(
    ("created", "mode"), [(DUPLEX_CREATED, "passthrough"), (TURN_CREATED, "duplex_emulated")]
)
async def test_a_hung_upstream_is_found_by_its_heartbeat(
    created: dict[str, Any], mode: str
) -> None:
    async with silent_upstream(created) as (upstream, seen):
        server = {"upstream_heartbeat_s": 0.4}
        cfg = proxy_config({"m": upstream}, server=server, redial=REDIAL_TWICE)
        native = {"duplex": "1"} if mode == "passthrough" else {}  # GA clients: emulated
        async with proxy(cfg) as base, connect(ws_url(base, **native)) as c:
            ev = await c.until("session.created")
            assert ev["session"]["capabilities"]["proxy"]["mode"] == mode
            assert await closed(c) == 1011
            assert "upstream_unavailable" in codes(c)
    if mode == "duplex_emulated":
        # The emulated session took its upstream-lost path: a redial, tried twice.
        assert len(seen) == 3, seen


@pytest.mark.parametrize(
    ("created", "mode"),
    [(DUPLEX_CREATED, "passthrough"), (NO_BARGE_IN_CREATED, "barge_in_emulated")],
)
async def test_an_upstream_that_stops_reading_is_found_by_the_send_timeout(
    created: dict[str, Any], mode: str
) -> None:
    server = {
        "upstream_heartbeat_s": 600,  # the heartbeat would notice far later
        "upstream_send_timeout_s": 0.5,
        "input_realtime_factor": 1000,
    }
    chunk = "A" * 400_000  # 300 kB of audio a frame: the socket buffers fill quickly
    async with silent_upstream(created) as (upstream, seen):
        cfg = proxy_config({"m": upstream}, server=server, redial=REDIAL_TWICE)
        native = {"duplex": "1"} if mode == "passthrough" else {}  # GA clients: emulated
        async with proxy(cfg) as base, connect(ws_url(base, **native)) as c:
            ev = await c.until("session.created")
            assert ev["session"]["capabilities"]["proxy"]["mode"] == mode

            async def push() -> None:
                while True:
                    await c.send({"type": "input_audio_buffer.append", "audio": chunk})

            pusher = asyncio.create_task(push())
            try:
                assert await closed(c, within_s=30) == 1011
            finally:
                pusher.cancel()
            assert "upstream_unavailable" in codes(c)
    # The emulated session took its upstream-lost path: it dialled again, twice.
    assert len(seen) == (3 if mode == "barge_in_emulated" else 1)


async def test_an_unreachable_upstream_is_named_by_its_route_not_its_address() -> None:
    port = closed_port()
    cfg = proxy_config({"voice-a": f"ws://127.0.0.1:{port}/v1/realtime"})
    async with proxy(cfg) as base, connect(ws_url(base, model="voice-a")) as c:
        assert await closed(c) == 1011
        [err] = c.of("error")
        message = err["error"]["message"]
        assert err["error"]["code"] == "upstream_unavailable"
        assert "'voice-a'" in message
        assert "127.0.0.1" not in message and str(port) not in message


# ---------------------------------------------------------------- client limits


async def test_an_oversize_frame_closes_with_1009_and_a_reason() -> None:
    async with reference("turn") as upstream:
        cfg = proxy_config({"m": upstream}, server={"max_frame_bytes": 64 * 1024})
        async with proxy(cfg) as base, connect(ws_url(base)) as c:
            await c.until("session.created")
            # Within twice the limit: read whole and refused with a reason (a frame
            # bigger still is refused from its header, unread: tests/test_client_memory.py).
            big = '{"type":"input_audio_buffer.append","audio":"' + "A" * 100_000 + '"}'
            await c.ws.send_str(big)
            msg = await c.ws.receive(timeout=10)
            assert msg.type == aiohttp.WSMsgType.CLOSE
            assert c.ws.close_code == 1009
            assert "65536 bytes" in msg.extra


@pytest.mark.parametrize("kind", KINDS)
async def test_an_idle_session_is_warned_then_ended(kind: str) -> None:
    server = {"idle_timeout_s": 1.5, "idle_warning_s": 1.0}
    async with (
        reference(kind) as upstream,
        proxy_with_state(proxy_config({"m": upstream}, server=server)) as (base, state),
    ):
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            warning = await c.until("error")
            assert warning["error"]["code"] == "session_idle_timeout"
            assert await closed(c) == 1000
        # Ended, not in a disconnect grace: nothing holds the upstream session.
        await eventually(lambda: not state.live and not state.occupied())


async def test_a_session_ends_at_its_maximum_duration() -> None:
    async with reference("turn") as upstream:
        cfg = proxy_config({"m": upstream}, server={"max_session_s": 1.5})
        async with proxy(cfg) as base, connect(ws_url(base)) as c:
            await c.until("session.created")

            async def busy() -> None:
                while True:
                    await c.send({"type": "input_audio_buffer.clear"})
                    await asyncio.sleep(0.2)

            chatter = asyncio.create_task(busy())
            try:
                assert await closed(c) == 1000
            finally:
                chatter.cancel()
            assert "session_expired" in codes(c)


async def test_a_request_that_never_completes_its_upgrade_is_closed() -> None:
    cfg = proxy_config({}, server={"http_handshake_timeout_s": 1.0})
    async with proxy(cfg) as base:
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /v1/realtime?model=m HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
        await writer.drain()
        async with asyncio.timeout(10):
            assert await reader.read() == b""
        writer.close()


# ---------------------------------------------------------------- idle cost


@pytest.mark.parametrize("kind", ["duplex-no-barge-in", "turn"])
async def test_an_idle_emulated_session_schedules_no_ticks(kind: str) -> None:
    async with (
        reference(kind) as upstream,
        proxy_with_state(proxy_config({"m": upstream})) as (base, state),
        connect(ws_url(base)) as c,
    ):
        await c.until("session.created")
        [runner] = state.live.values()
        assert isinstance(runner, EmulatedRunner)
        await asyncio.wait_for(runner.ticker.dormant.wait(), 20)
        fed = runner.ticker.fed
        await asyncio.sleep(0.5)  # ten ticks' worth at the old fixed 50 ms
        assert runner.ticker.fed == fed and runner.ticker.dormant.is_set()
        # ...and an event wakes it up again.
        await c.send({"type": "input_audio_buffer.clear"})
        await eventually(lambda: runner.ticker.fed > fed)


# ---------------------------------------------------------------- redial policy


async def test_a_redial_tries_again_within_its_attempts_then_gives_up() -> None:
    policy = RedialConfig(attempts=3, budget_s=30.0, backoff_s=0.01)
    tries: list[int] = []

    async def down_twice() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise UpstreamUnavailable("cannot connect to the upstream")
        return "socket"

    failures: list[int] = []
    assert await retrying(down_twice, policy, lambda n, _: failures.append(n)) == "socket"
    assert failures == [1, 2]

    async def always_down() -> str:
        raise UpstreamUnavailable("cannot connect to the upstream")

    with pytest.raises(UpstreamUnavailable):
        await retrying(always_down, policy, lambda n, _: failures.append(n))
    assert failures == [1, 2, 1, 2, 3]


async def test_a_refusal_is_not_tried_again() -> None:
    tries: list[int] = []

    async def refused() -> str:
        tries.append(1)
        raise UpstreamRefused({"type": "error", "error": {"code": "session_resume_expired"}})

    with pytest.raises(UpstreamRefused):
        await retrying(refused, RedialConfig(attempts=5, backoff_s=0.01), lambda n, _: None)
    assert tries == [1]


def test_the_redial_outbox_holds_up_to_its_bound_and_says_when_it_dropped() -> None:
    box = Outbox(limit=10)
    assert box.hold("12345") and box.hold("6789")
    assert not box.hold("abc")  # over the bound: dropped
    assert box.overflowed
    assert box.take() == ["12345", "6789"]
    assert box.take() == []
    assert box.hold("abcdefghij")  # the bound is free again
