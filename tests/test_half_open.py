"""A client whose connection goes silent without a FIN or a reset (a half-open
connection: a laptop lid closed, a NAT entry dropped) is found by the proxy's ping
(``server.client_heartbeat_s``), not after ``idle_timeout_s``: its session then waits
for a resume, and once its grace is over its slot is free for another client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from proxy.reference.options import ReferenceOptions
from tests.servers import Client, connect, proxy, proxy_config, reference, ws_url


@asynccontextmanager
async def freezable(target_port: int) -> AsyncIterator[tuple[int, asyncio.Event]]:
    """A TCP relay to ``target_port``; once the event is set nothing more passes
    either way, and no connection through it is closed."""
    frozen = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while data := await src.read(65536):
            if frozen.is_set():
                await asyncio.Event().wait()  # swallow it, forever
            dst.write(data)
            await dst.drain()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target_port)
        writers.extend((writer, up_writer))
        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], frozen
    finally:
        for w in writers:
            w.transport.abort()
        server.close()


async def test_a_half_open_client_is_found_by_its_ping_and_its_slot_freed() -> None:
    options = ReferenceOptions(max_sessions=2)
    async with reference("duplex-no-barge-in", options=options) as upstream:
        cfg = proxy_config(
            {},
            routes=[{"model": "m", "upstream": upstream, "max_sessions": 1}],
            server={"client_heartbeat_s": 1.0, "idle_timeout_s": 3600},
            store={"disconnect_grace_s": 0.5},
        )
        async with proxy(cfg) as base:
            port = int(base.rsplit(":", 1)[1])
            async with freezable(port) as (relay, frozen):
                relayed = ws_url(f"http://127.0.0.1:{relay}")
                async with aiohttp.ClientSession() as http, http.ws_connect(relayed) as ws:
                    await Client(ws).until("session.created")
                    frozen.set()  # the client is gone, and nobody says so
                    for _ in range(60):
                        async with connect(ws_url(base)) as c:
                            first = await c.recv()
                            if first["type"] == "session.created":
                                break
                            assert first["error"]["code"] == "server_at_capacity", first
                        await asyncio.sleep(0.25)
                    else:
                        raise AssertionError("the half-open session kept its slot")
