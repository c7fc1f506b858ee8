"""Passthrough keeps the client's frames in order, whichever way each reaches the upstream.

A frame goes up from the connection's pending list (sent before the session was
ready), from the inbox (read before the relay began), or straight from the client's
reader (``ClientChannel.sink``, ``proxy/passthrough/relay.py``). The client sends
everything at once, so frames arrive before the session is ready, and an upstream
that reads nothing at first makes the sends wait (the reader stops, the client's
socket pushes back). Real sockets on loopback: the proxy in process and an upstream
that answers each event with its id.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import WSMsgType, web

from bench.echo_upstream import SESSION_CREATED
from tests.servers import connect, proxy, proxy_config, serve_app, ws_url


@asynccontextmanager
async def echo_upstream(stall_s: float) -> AsyncIterator[str]:
    """Answers every event with its id, after reading nothing for ``stall_s``."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        await ws.send_json(SESSION_CREATED)
        await asyncio.sleep(stall_s)
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                break
            event = json.loads(msg.data)
            await ws.send_json({"type": "echo", "id": event.get("event_id")})
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


async def test_frames_reach_the_upstream_in_order_once_each() -> None:
    n = 200
    audio = "A" * 65536  # 2 s of audio a frame: the sockets' buffers fill during the stall
    routes = [{"model": "m", "upstream": "", "mode": "passthrough"}]
    async with echo_upstream(stall_s=0.5) as upstream:
        routes[0]["upstream"] = upstream
        config = proxy_config(
            {}, routes=routes, server={"pending_client_frames": 4, "input_realtime_factor": 1000}
        )
        async with proxy(config) as base, connect(ws_url(base, duplex="1")) as c:
            for i in range(n):  # at once: before the session is ready, and after
                await c.send(
                    {"type": "input_audio_buffer.append", "event_id": f"e{i}", "audio": audio}
                )
            created = await c.until("session.created")
            assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
            # A re-sent id (among the last store.recent_event_ids) is dropped; the next
            # new one still goes up.
            resent = {"type": "input_audio_buffer.append", "event_id": f"e{n - 3}", "audio": audio}
            await c.send(resent)
            await c.send({"type": "input_audio_buffer.append", "event_id": "last", "audio": audio})
            seen: list[str] = []
            while not seen or seen[-1] != "last":
                event = await c.until("echo")
                if event["id"] is not None:  # (the proxy's own opening update has none)
                    seen.append(event["id"])
    assert seen == [f"e{i}" for i in range(n)] + ["last"]
