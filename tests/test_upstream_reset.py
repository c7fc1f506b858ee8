"""An upstream that stops reading, then resets its connection while the proxy waits
to write to it: the proxy's pending write fails with a bare ``ConnectionError``
(aiohttp's drain), which is an upstream lost like any other: the emulated session
reaches the upstream again and goes on, with no ``internal_error``
(docs/protocol.md, ``upstream_reconnecting``)."""

from __future__ import annotations

import asyncio
import json
import uuid

from aiohttp import web

from tests.fuzz_upstream import FuzzUpstream
from tests.servers import connect, proxy, proxy_config, serve_app, ws_url

PROMPT = "p" * 1_000_000  # ~1 MB each: a few fill the socket buffers between the two


def created() -> str:
    return json.dumps(
        {
            "type": "session.created",
            "event_id": f"event_{uuid.uuid4().hex}",
            "session": {
                "id": f"duplex-{uuid.uuid4().hex}",
                "model": "m",
                "capabilities": {
                    "supports_barge_in": False,
                    "supports_playback_ack": True,
                    "supports_client_commit": True,
                    "supports_session_resume": True,
                    "supports_multi_session": True,
                },
            },
            "resume_token": uuid.uuid4().hex,
        }
    )


async def test_an_upstream_reset_while_the_proxy_writes_to_it_is_redialled_not_a_fault() -> None:
    benign = FuzzUpstream("duplex-no-barge-in")
    stalled, reset = asyncio.Event(), asyncio.Event()
    first = True

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal first
        if not first:
            return await benign.handle(request)
        first = False
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        await ws.receive()  # the opening session.update
        await ws.send_str(created())
        assert request.transport is not None
        request.transport.pause_reading()  # takes nothing more: the proxy's writes back up
        stalled.set()
        await reset.wait()
        request.transport.abort()  # unread bytes in its buffer: the proxy sees a reset
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handle)
    async with serve_app(app) as base:
        upstream = base.replace("http://", "ws://") + "/v1/realtime"
        async with proxy(proxy_config({"m": upstream})) as pbase, connect(ws_url(pbase)) as c:
            await c.until("session.created")
            await stalled.wait()
            for i in range(12):
                update = {"type": "session.update", "session": {"instructions": f"{PROMPT}{i}"}}
                await c.send(update)
            await asyncio.sleep(1.0)  # the proxy is left waiting on its full socket
            reset.set()
            await c.send({"type": "session.update", "session": {"instructions": "after"}})
            while True:
                event = await c.recv(timeout=30)
                assert event.get("error", {}).get("code") != "internal_error", event
                if event["type"] == "session.updated":
                    if event["session"].get("instructions") == "after":
                        break
            assert not c.ws.closed
            await c.send({"type": "session.update", "session": {"instructions": "again"}})
            updated = await c.until("session.updated", timeout=15)
            assert updated["session"]["instructions"] == "again"
