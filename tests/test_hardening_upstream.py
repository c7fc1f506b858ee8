"""What a hung or unreachable upstream may cost the proxy, bounded (docs/protocol.md): a
hung upstream is found by its heartbeat, one that stops reading by the send timeout,
and an unreachable one is named to the client by its route, never its address.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from tests.hardening_helpers import codes
from tests.ports import closed_port
from tests.servers import closed, connect, proxy, proxy_config, serve_app, ws_url


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
