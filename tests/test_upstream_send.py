"""An upstream that stops reading: ``send_within`` gives up, whatever the frame holds.

Small frames into an empty socket buffer are written without a timer
(``proxy/ws_direct.py``, ``DIRECT_MAX_BYTES``). The size that makes this safe is in
bytes: a frame of few characters but many bytes of UTF-8 (emoji in an instruction)
must take the timed path, or a send to an upstream that stopped reading waits forever.
"""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp import web

from proxy.upstream import send_within
from proxy.ws_direct import DIRECT_MAX_BYTES, fits_direct, write_buffered

SMALL_BUFFER = 4096


def test_the_direct_size_counts_bytes_not_characters() -> None:
    assert fits_direct("a" * DIRECT_MAX_BYTES)
    assert not fits_direct("a" * (DIRECT_MAX_BYTES + 1))
    assert fits_direct("\U0001f600" * (DIRECT_MAX_BYTES // 4))
    assert not fits_direct("\U0001f600" * (DIRECT_MAX_BYTES // 4 + 1))


@pytest.mark.parametrize("char", ["a", "\U0001f600"], ids=["ascii", "emoji"])
async def test_a_send_to_an_upstream_that_stopped_reading_times_out(char: str) -> None:
    stop, stalled = asyncio.Event(), asyncio.Event()

    async def upstream(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        assert request.transport is not None
        request.transport.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER
        )

        async def read() -> None:
            async for _ in ws:
                if stalled.is_set():
                    break

        reader = asyncio.create_task(read())
        await stalled.wait()
        request.transport.pause_reading()  # it stops reading: its socket fills, then ours
        await stop.wait()
        reader.cancel()
        return ws

    app = web.Application()
    app.router.add_get("/", upstream)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(f"http://127.0.0.1:{port}/", compress=0)
            sock = ws._writer.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)
            for _ in range(4):  # earlier traffic, read: aiohttp's byte count since a drain grows
                await send_within(ws, '{"type":"x","a":"' + "a" * 50000 + '"}', 5.0)
            while write_buffered(ws):  # noqa: ASYNC110 (no event says the buffer drained)
                await asyncio.sleep(0.01)
            stalled.set()
            await asyncio.sleep(0.3)
            # ~128 KB of UTF-8 either way; as emoji it is under DIRECT_MAX_BYTES characters.
            text = (
                '{"type":"conversation.item.create","text":"'
                + char * (128000 // len(char.encode()))
                + '"}'
            )
            assert write_buffered(ws) == 0
            async with asyncio.timeout(20) as guard:
                with pytest.raises(TimeoutError):
                    await send_within(ws, text, 1.0)
            assert not guard.expired(), "send_within waited past its own limit"
            stop.set()
            ws._writer.transport.abort()
    finally:
        stop.set()
        await runner.cleanup()
