"""An upstream that sends faster than a session handles its events (here: 40 000
audio deltas, ~33 minutes of audio, at once) is read only as fast as the session
takes them (``server.upstream_queue_bytes``, ``proxy/client_queue.py``): the proxy in
its own process stays bounded, and the client still gets every delta. One that sends
a frame over its route's ``upstream_max_frame_bytes`` loses its socket before the
frame is read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pybase64
from aiohttp import web

from tests.flood_stack import created, rss_mb
from tests.fuzz_upstream import FuzzUpstream, fuzz_upstream
from tests.fuzz_upstream_script import Script, Send
from tests.proxy_process import proxy_process
from tests.servers import connect, proxy, proxy_config, serve_app, ws_url

DELTAS = 40_000  # ~260 MB of events: queued whole, the proxy grew by about 600 MB


async def flood(request: web.Request) -> web.StreamResponse:
    ws = web.WebSocketResponse(max_msg_size=0)
    await ws.prepare(request)
    await ws.receive()  # the opening session.update
    await ws.send_str(created())
    audio = pybase64.b64encode(b"\x10\x20" * 2400).decode()  # 100 ms
    ids = {"response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0}
    seq = 0

    async def send(event: dict[str, object]) -> None:
        nonlocal seq
        seq += 1
        await ws.send_str(json.dumps({**event, "server_event_seq": seq, "session_id": "s"}))

    await send({"type": "response.created", "response": {"id": "r1"}})
    item = {"id": "i1", "type": "message", "role": "assistant"}
    await send({"type": "response.output_item.added", "response_id": "r1", "item": item})
    for _ in range(DELTAS):
        await send({"type": "response.output_audio.delta", **ids, "delta": audio})
    async for _ in ws:
        pass
    return ws


async def test_an_upstream_flooding_a_session_is_read_as_fast_as_it_is_handled(
    tmp_path: Path,
) -> None:
    app = web.Application()
    app.router.add_get("/v1/realtime", flood)
    async with serve_app(app) as base:
        upstream = base.replace("http://", "ws://") + "/v1/realtime"
        config = (
            '[server]\nlog_level = "warning"\n[auth]\nmode = "none"\n'
            f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
        )
        async with proxy_process(tmp_path, "p", config) as p:
            pid = p.proc.pid
            base_mb = peak = rss_mb(pid)
            url = p.base.replace("http://", "ws://") + "/v1/realtime?model=m"
            deltas = 0
            async with aiohttp.ClientSession() as http, http.ws_connect(url) as ws:

                async def read() -> None:
                    nonlocal deltas
                    async for msg in ws:
                        if '"response.output_audio.delta"' in msg.data:
                            deltas += 1
                            if deltas == DELTAS:
                                return

                reader = asyncio.create_task(read())
                while not reader.done():
                    peak = max(peak, rss_mb(pid))
                    await asyncio.wait({reader}, timeout=0.1)
                await reader
            assert deltas == DELTAS
            assert peak - base_mb < 250, (peak, base_mb)


async def test_an_upstream_frame_over_the_routes_limit_is_never_read_and_the_session_goes_on() -> (
    None
):
    upstream = FuzzUpstream("duplex-no-barge-in")
    huge = json.dumps({"type": "session.updated", "session": {"instructions": "h" * 4_000_000}})
    upstream.arm(Script(steps=(Send("huge", text=huge),)))
    async with fuzz_upstream(upstream) as url:
        route = {"model": "m", "upstream": url, "upstream_max_frame_bytes": 1024 * 1024}
        async with (
            proxy(proxy_config({}, routes=[route])) as base,
            connect(ws_url(base)) as c,
        ):
            await c.until("session.created")
            await c.send({"type": "session.update", "session": {"instructions": "after"}})
            while True:
                event = await c.recv(timeout=20)
                assert "h" * 1000 not in json.dumps(event)
                if event["type"] == "session.updated":
                    assert event["session"]["instructions"] == "after"
                    break
            for _ in range(400):  # the socket that sent it was let go, and replaced
                if upstream.connections >= 2:
                    break
                await asyncio.sleep(0.05)
            assert upstream.connections >= 2
            await c.send({"type": "session.update", "session": {"instructions": "again"}})
            assert (await c.until("session.updated"))["session"]["instructions"] == "again"
