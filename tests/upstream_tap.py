"""A WebSocket relay between the proxy and a reference backend that keeps what each
upstream session was sent, so a test can tell whether an upstream session heard a
turn twice, and act the moment a given event goes upstream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from aiohttp import web

from tests.servers import serve_app


class UpstreamTap:
    def __init__(self, target: str) -> None:
        self.target = target
        # Per upstream socket, in order: what the proxy sent, what the backend answered.
        self.sent: list[list[dict[str, Any]]] = []
        self.answered: list[list[dict[str, Any]]] = []
        # Called with (socket number, event) once an event from the proxy went on.
        self.on_sent: Callable[[int, dict[str, Any]], None] | None = None
        # Called with (socket number, event) once an event from the backend went on.
        self.on_answered: Callable[[int, dict[str, Any]], None] | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        no = len(self.sent)
        self.sent.append([])
        self.answered.append([])
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        url = self.target + ("?" + request.query_string if request.query_string else "")
        async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as up:

            async def onward() -> None:
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        await up.send_str(msg.data)
                        self.sent[no].append(json.loads(msg.data))
                        if self.on_sent is not None:
                            self.on_sent(no, self.sent[no][-1])
                await up.close()

            async def back() -> None:
                async for msg in up:
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        self.answered[no].append(json.loads(msg.data))
                        await ws.send_str(msg.data)
                        if self.on_answered is not None:
                            self.on_answered(no, self.answered[no][-1])
                await ws.close()

            tasks = [asyncio.create_task(onward()), asyncio.create_task(back())]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return ws

    def upstream_session(self, no: int) -> str | None:
        """The backend's session id socket ``no`` spoke for (opened, or resumed)."""
        for ev in self.sent[no]:
            if ev.get("type") == "session.resume":
                return str(ev.get("session_id"))
        for ev in self.answered[no]:
            if ev.get("type") == "session.created":
                return str(ev["session"]["id"])
        return None

    def sent_per_session(self, kind: str) -> dict[str, int]:
        """How many events of ``kind`` each backend session was sent, over its sockets."""
        counts: dict[str, int] = {}
        for no, events in enumerate(self.sent):
            sid = self.upstream_session(no)
            if sid is not None:
                n = sum(1 for ev in events if ev.get("type") == kind)
                counts[sid] = counts.get(sid, 0) + n
        return counts


@asynccontextmanager
async def upstream_tap(target: str) -> AsyncIterator[tuple[UpstreamTap, str]]:
    """A tap in front of the backend at ``target`` (ws://.../v1/realtime); yields it
    and the URL that reaches the backend through it."""
    tap = UpstreamTap(target)
    app = web.Application()
    app.router.add_get("/v1/realtime", tap.handle)
    async with serve_app(app) as base:
        yield tap, base.replace("http://", "ws://") + "/v1/realtime"
