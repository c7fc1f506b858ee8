"""Misbehaving stand-ins for the probe's checks, built in front of real servers.

``Middleman`` is a WebSocket man-in-the-middle: every connection to it opens one to
``upstream`` (same path and query) and relays frames both ways untouched, except
for the one fault it was built with:

* ``duplicate_after_resume``: on a connection that began with ``session.resume``,
  the first sequenced event after ``session.resumed`` is delivered twice;
* ``strip_resent_ids``: on such a connection the client's events lose their
  ``event_id`` before they go on, so the upstream cannot tell a re-sent event;
* ``limit=N``: beyond N live connections a new one is refused; with
  ``refusal_code=None`` only by closing (1011, no error event), else with an error
  event carrying that code (close 1013).

It also serves ``/metrics`` in the Prometheus text format, as a GPU server with the
DCGM exporter and vLLM would: frame-buffer memory and KV-cache usage that follow
the number of live sessions (``leak=True``: every session ever opened keeps its
share, as if ended sessions never gave their memory back).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
import orjson
from aiohttp import WSMsgType, web

from tests.servers import serve_app

BASE_MB = 20_000.0
TOTAL_MB = 81_920.0
PER_SESSION_MB = 300.0
PER_SESSION_KV = 0.04


@dataclass(slots=True)
class Faults:
    duplicate_after_resume: bool = False
    strip_resent_ids: bool = False
    limit: int | None = None
    refusal_code: str | None = "resource_exhausted"
    leak: bool = False


class Middleman:
    def __init__(self, upstream: str, faults: Faults) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults = faults
        self.live = 0
        self.opened = 0
        #: Set once it serves: its realtime WebSocket URL and its metrics URL.
        self.url = ""
        self.metrics_url = ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/{path:.*}", self.relay)
        return app

    async def metrics(self, request: web.Request) -> web.Response:
        sessions = self.opened if self.faults.leak else self.live
        used = BASE_MB + PER_SESSION_MB * sessions
        kv = min(1.0, 0.01 + PER_SESSION_KV * sessions)
        text = (
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
            "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
            f'DCGM_FI_DEV_FB_USED{{gpu="0",modelName="stand-in"}} {used}\n'
            f'DCGM_FI_DEV_FB_FREE{{gpu="0",modelName="stand-in"}} {TOTAL_MB - used}\n'
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {kv}\n'
        )
        return web.Response(text=text)

    async def relay(self, request: web.Request) -> web.WebSocketResponse:
        client = web.WebSocketResponse(max_msg_size=0, autoping=True)
        await client.prepare(request)
        limit = self.faults.limit
        if limit is not None and self.live >= limit:
            await self._refuse(client)
            return client
        self.live += 1
        self.opened += 1
        target = self.upstream + request.path_qs
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.ws_connect(target, max_msg_size=0, compress=0) as up,
            ):
                await self._pump(client, up)
        except aiohttp.ClientError:
            pass
        finally:
            self.live -= 1
            await client.close()
        return client

    async def _refuse(self, client: web.WebSocketResponse) -> None:
        code = self.faults.refusal_code
        if code is None:
            await client.close(code=1011)
            return
        error = {
            "type": "error",
            "error": {"type": "server_error", "code": code, "message": "full"},
        }
        await client.send_str(orjson.dumps(error).decode())
        await client.close(code=1013)

    async def _pump(
        self, client: web.WebSocketResponse, up: aiohttp.ClientWebSocketResponse
    ) -> None:
        state = {"resumed": False, "duplicated": False}

        async def downstream() -> None:
            async for msg in up:
                if msg.type != WSMsgType.TEXT:
                    break
                await client.send_str(msg.data)
                event = orjson.loads(msg.data)
                if event.get("type") == "session.resumed":
                    state["resumed"] = True
                elif (
                    self.faults.duplicate_after_resume
                    and state["resumed"]
                    and not state["duplicated"]
                    and "server_event_seq" in event
                ):
                    state["duplicated"] = True
                    await client.send_str(msg.data)

        async def upstream() -> None:
            first = True
            resuming = False
            async for msg in client:
                if msg.type != WSMsgType.TEXT:
                    break
                data = msg.data
                event = orjson.loads(data)
                if first:
                    resuming = event.get("type") == "session.resume"
                    first = False
                elif resuming and self.faults.strip_resent_ids and "event_id" in event:
                    del event["event_id"]
                    data = orjson.dumps(event).decode()
                await up.send_str(data)

        tasks = [asyncio.create_task(downstream()), asyncio.create_task(upstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


@asynccontextmanager
async def middleman(upstream: str, faults: Faults | None = None) -> AsyncIterator[Middleman]:
    """Yields the running middleman; ``.url`` is its realtime URL, ``.metrics_url`` its metrics."""
    upstream_base = upstream.split("/v1/")[0]
    man = Middleman(upstream_base, faults or Faults())
    async with serve_app(man.app()) as base:
        man.url = base.replace("http://", "ws://") + "/v1/realtime"
        man.metrics_url = base + "/metrics"
        yield man
