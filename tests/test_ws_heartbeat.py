"""The sockets' heartbeat (proxy/ws_heartbeat.py), on real sockets on loopback: a peer
that answers nothing is found and closed as aiohttp closes it (1006), on the client
side (``ClientResponse``) and the upstream side (``UpstreamResponse``); a peer that
sends is never pinged; a quiet one that answers its pings stays open."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web

from proxy.upstream import upstream_http
from proxy.ws_direct import ClientResponse, UpstreamResponse, install_tap
from proxy.ws_heartbeat import Heartbeat

BEAT_S = 0.4
Handler = Callable[[web.WebSocketResponse], Awaitable[None]]


@asynccontextmanager
async def server(
    handler: Handler, beat_s: float | None = BEAT_S, autoping: bool = True
) -> AsyncIterator[tuple[str, list[web.WebSocketResponse]]]:
    """A WebSocket server whose sockets are the proxy's client sockets (``ClientResponse``
    with a heartbeat of ``beat_s``); the sockets it opened, in order."""
    opened: list[web.WebSocketResponse] = []

    async def serve(request: web.Request) -> web.WebSocketResponse:
        ws = ClientResponse(heartbeat=beat_s, autoping=autoping)
        await ws.prepare(request)
        opened.append(ws)
        await handler(ws)
        return ws

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"ws://127.0.0.1:{port}/", opened
    finally:
        await runner.cleanup()


async def read_all(ws: web.WebSocketResponse) -> None:
    async for _ in ws:
        pass


async def test_a_client_that_answers_no_ping_is_closed() -> None:
    ended: list[aiohttp.WSMsgType] = []

    async def handler(ws: web.WebSocketResponse) -> None:
        msg = await ws.receive()
        ended.append(msg.type)

    async with (
        server(handler) as (url, opened),
        aiohttp.ClientSession() as http,
        http.ws_connect(url, autoping=False) as client,
    ):
        pings = 0
        while (msg := await client.receive(timeout=30)).type is aiohttp.WSMsgType.PING:
            pings += 1  # and no pong
        assert msg.type is aiohttp.WSMsgType.CLOSED  # the server dropped the socket
        for _ in range(300):
            if ended:
                break
            await asyncio.sleep(0.05)
        (ws,) = opened
        assert isinstance(ws.beat, Heartbeat)  # not aiohttp's own
        assert pings == 1
        assert ended == [aiohttp.WSMsgType.ERROR]  # as aiohttp's heartbeat ends it
        assert ws.close_code == 1006


async def test_a_client_that_sends_is_not_pinged() -> None:
    async with (
        server(read_all) as (url, opened),
        aiohttp.ClientSession() as http,
        http.ws_connect(url, autoping=False) as client,
    ):
        pings: list[aiohttp.WSMessage] = []

        async def count() -> None:
            async for msg in client:
                if msg.type is aiohttp.WSMsgType.PING:
                    pings.append(msg)

        counting = asyncio.create_task(count())
        for _ in range(60):  # 3 s, a frame every 50 ms: over 7 beats
            await client.send_str('{"type":"input_audio_buffer.append","audio":""}')
            await asyncio.sleep(0.05)
        counting.cancel()
        (ws,) = opened
        assert isinstance(ws.beat, Heartbeat)
        assert pings == []
        assert not ws.closed


async def test_a_quiet_client_that_answers_its_pings_stays() -> None:
    async with (
        server(read_all) as (url, opened),
        aiohttp.ClientSession() as http,
        http.ws_connect(url, autoping=False) as client,
    ):
        pings = 0
        for _ in range(3):
            msg = await client.receive(timeout=30)
            assert msg.type is aiohttp.WSMsgType.PING, msg
            pings += 1
            await client.pong(msg.data)
        (ws,) = opened
        assert pings == 3
        assert not ws.closed and not client.closed


async def test_no_heartbeat_without_one_asked() -> None:
    async with (
        server(read_all, beat_s=None) as (url, opened),
        aiohttp.ClientSession() as http,
        http.ws_connect(url) as client,
    ):
        await client.send_str("{}")
        await client.send_str("{}")
        (ws,) = opened
        assert ws.beat is None


async def test_an_upstream_that_answers_no_ping_is_closed() -> None:
    async def handler(ws: web.WebSocketResponse) -> None:
        await read_all(ws)  # the pings arrive, no pong goes back

    async with server(handler, beat_s=None, autoping=False) as (url, _), upstream_http() as http:
        ws = await http.ws_connect(url, heartbeat=BEAT_S)
        install_tap(ws, 1 << 20)
        assert isinstance(ws, UpstreamResponse) and isinstance(ws.beat, Heartbeat)
        msg = await ws.receive(timeout=30)
        assert msg.type is aiohttp.WSMsgType.ERROR
        assert isinstance(msg.data, aiohttp.ServerTimeoutError)
        assert ws.close_code == 1006
        await ws.close()


async def test_an_upstream_that_sends_is_not_pinged() -> None:
    pings: list[aiohttp.WSMessage] = []

    async def handler(ws: web.WebSocketResponse) -> None:
        async def talk() -> None:
            for _ in range(60):
                await ws.send_str('{"type":"response.output_audio.delta","delta":""}')
                await asyncio.sleep(0.05)
            await ws.close()

        talking = asyncio.create_task(talk())
        async for msg in ws:
            if msg.type is aiohttp.WSMsgType.PING:
                pings.append(msg)
        await talking

    async with server(handler, beat_s=None, autoping=False) as (url, _), upstream_http() as http:
        ws = await http.ws_connect(url, heartbeat=BEAT_S)
        install_tap(ws, 1 << 20)
        assert isinstance(ws.beat, Heartbeat)
        got = 0
        async for msg in ws:
            assert msg.type is aiohttp.WSMsgType.TEXT
            got += 1
        assert got == 60
        assert pings == []
        assert ws.close_code == 1000
