"""The direct text frame writer (proxy/ws_write.py): the frames it writes are the
frames aiohttp's own writer writes, byte for byte, and real aiohttp peers read them
at every length encoding (7-bit, 16-bit, 64-bit), masked (upstream sockets) and not
(client sockets)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp._websocket.writer import WebSocketWriter

from proxy.upstream import upstream_http
from proxy.ws_direct import ClientResponse
from proxy.ws_write import frame_writer

# Every length encoding and its edges; a multi-byte character counts its bytes.
TEXTS = [
    "",
    "a",
    "a" * 125,
    "é" * 63,  # 126 bytes: the first 16-bit length
    "a" * 126,
    "a" * 1340,
    "a" * 65535,
    "a" * 65536,  # the first 64-bit length
    "a" * 70000 + "€",
]


class Transport:
    """What a writer needs of a transport, keeping what it is given."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.closing = False

    def write(self, data: Any) -> None:
        self.out += data

    def is_closing(self) -> bool:
        return self.closing


class Protocol:
    _paused = False


def writer_pair(masked: bool, seed: int) -> tuple[WebSocketWriter, Transport]:
    transport = Transport()
    writer = WebSocketWriter(Protocol(), transport, use_mask=masked)  # type: ignore[arg-type]
    writer.get_random_bits = partial(random.Random(seed).getrandbits, 32)
    return writer, transport


class Socket:
    def __init__(self, writer: WebSocketWriter) -> None:
        self._writer = writer


@pytest.mark.parametrize("masked", [False, True])
def test_the_bytes_are_aiohttps(masked: bool) -> None:
    ours, our_out = writer_pair(masked, seed=7)
    theirs, their_out = writer_pair(masked, seed=7)  # the same masks, in the same order
    write = frame_writer(Socket(ours))  # type: ignore[arg-type]
    assert write is not None
    for text in TEXTS:
        assert write(text)
        theirs._write_websocket_frame(text.encode(), aiohttp.WSMsgType.TEXT, 0)
        assert bytes(our_out.out) == bytes(their_out.out), len(text)
    our_out.closing = True
    assert not write("late")  # a closing transport takes nothing
    ours._closing = True
    our_out.closing = False
    assert not write("late")  # nor a closing writer
    assert bytes(our_out.out) == bytes(their_out.out)


@asynccontextmanager
async def server(response: type[web.WebSocketResponse]) -> AsyncIterator[tuple[str, Any]]:
    """A server whose one socket is handed over, with the frames it reads."""
    opened: asyncio.Future[web.WebSocketResponse] = asyncio.get_running_loop().create_future()
    got: list[str] = []

    async def serve(request: web.Request) -> web.WebSocketResponse:
        ws = response(max_msg_size=1 << 20)
        await ws.prepare(request)
        opened.set_result(ws)
        async for msg in ws:
            got.append(msg.data)
        return ws

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"ws://127.0.0.1:{runner.addresses[0][1]}/", (opened, got)
    finally:
        await runner.cleanup()


async def test_a_client_reads_what_is_written_to_it() -> None:
    async with (
        server(ClientResponse) as (url, (opened, _)),
        aiohttp.ClientSession() as http,
        http.ws_connect(url, max_msg_size=1 << 20) as client,
    ):
        ws = await opened
        write = frame_writer(ws)
        assert write is not None
        for text in TEXTS:
            assert write(text)
            msg = await client.receive(timeout=30)
            assert msg.type is aiohttp.WSMsgType.TEXT
            assert msg.data == text, len(text)
        await ws.close()
        assert not write("after the close")


async def test_an_upstream_reads_what_is_written_to_it() -> None:
    async with server(web.WebSocketResponse) as (url, (_, got)), upstream_http() as http:
        ws = await http.ws_connect(url)
        write = frame_writer(ws)
        assert write is not None
        for text in TEXTS:
            assert write(text)
        await ws.close()  # after the frames, in order
        assert got == TEXTS
        assert not write("after the close")
