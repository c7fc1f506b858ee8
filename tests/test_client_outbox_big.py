"""One event bigger than ``client_send_queue_bytes`` reaches a client that reads: the
limit bounds what waits for the client, not one event (``proxy/client_outbox.py``);
a client that does not read is still dropped (1008) once frames wait past it."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pybase64
from aiohttp import web

from proxy.client_outbox import ClientOutbox
from tests.flood_stack import created
from tests.servers import connect, proxy, proxy_config, serve_app, ws_url

QUEUE_BYTES = 1024 * 1024
DELTAS = 3


async def big_deltas(request: web.Request) -> web.StreamResponse:
    """A duplex upstream answering at once with deltas of 1.5 times the client's queue."""
    ws = web.WebSocketResponse(max_msg_size=0)
    await ws.prepare(request)
    await ws.receive()  # the opening session.update
    await ws.send_str(created())
    audio = pybase64.b64encode(b"\x10\x20" * (QUEUE_BYTES * 9 // 16)).decode()
    ids = {"response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0}
    item = {"id": "i1", "type": "message", "role": "assistant"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r1"}},
        {"type": "response.output_item.added", "response_id": "r1", "item": item},
        *({"type": "response.output_audio.delta", **ids, "delta": audio} for _ in range(DELTAS)),
    ]
    for seq, event in enumerate(events, 1):
        await ws.send_str(json.dumps({**event, "server_event_seq": seq, "session_id": "s"}))
    async for _ in ws:
        pass
    return ws


async def test_an_event_over_the_client_queue_reaches_a_client_that_reads() -> None:
    app = web.Application()
    app.router.add_get("/v1/realtime", big_deltas)
    async with serve_app(app) as base:
        upstream = base.replace("http://", "ws://") + "/v1/realtime"
        config = proxy_config(
            {"m": upstream},
            server={"client_send_queue_bytes": QUEUE_BYTES},
            store={"held_max_bytes": QUEUE_BYTES // 4},
        )
        async with proxy(config) as px, connect(ws_url(px)) as c:
            deltas = []
            async with asyncio.timeout(20):
                while len(deltas) < DELTAS:
                    event = await c.recv()
                    if event["type"] == "response.output_audio.delta":
                        deltas.append(len(event["delta"]))
            assert all(n > QUEUE_BYTES for n in deltas)
            assert not c.ws.closed


class _Outbox(ClientOutbox):
    dropped = False

    async def _drop_slow(self) -> None:
        self.dropped = True


async def test_what_waits_is_bounded_by_the_queue_bytes() -> None:
    """Not written (no writer runs here): the first big frame waits, the next one over
    the bound drops the client; a bigger queue bound takes it."""
    for max_bytes, dropped in ((100, True), (1000, False)):
        out = _Outbox()
        out._init_outbox(SimpleNamespace(closed=False), None, 10, max_bytes)  # type: ignore[arg-type]
        assert out.send_text("x" * 500)  # alone: taken, whatever its size
        assert out.send_text("y" * 400) is not dropped
        await asyncio.sleep(0)
        assert out.dropped is dropped
