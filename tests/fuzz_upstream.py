"""A fuzzing upstream: an aiohttp server that speaks one vLLM-Omni dialect, badly.

It plays ``duplex`` (``supports_barge_in: true``), ``duplex-no-barge-in`` or ``turn``
(docs/protocol.md, "What the proxy speaks upstream"). The first session opened after
``arm(script)`` gets the script: an opening (a valid ``session.created``, or something
else first: an event, garbage, a binary frame, a close, nothing at all), then its steps
(``Send`` frames: malformed, reordered, duplicated, oversized events) and an ending
(stay, or close cleanly, or abort the TCP connection). Every later connection is
benign: a valid opening, and answers to heartbeats, updates and turns, so that a proxy
that redials or resumes after the script finds a working upstream again.

For a turn-based dialect the script is played on the first committed turn
(``input_audio_buffer.commit {final: true}``), as that is when such a server speaks.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from proxy.reference.wire import VAD_NOT_ENABLED
from tests.fuzz_upstream_frames import duplex_response, turn_answer
from tests.fuzz_upstream_script import Counter, Script
from tests.servers import serve_app


@dataclass
class FuzzUpstream:
    """The server's state, shared with the test thread (plain attributes, set whole)."""

    dialect: str
    script: Script | None = None
    played: threading.Event = field(default_factory=threading.Event)
    connections: int = 0
    refused: int = 0
    down_until: float = 0.0  # time.monotonic() until which connections are refused

    def arm(self, script: Script) -> None:
        """The next session opened gets ``script``; ``played`` is set once it is sent."""
        self.played.clear()
        self.script = script

    def _take(self) -> Script | None:
        script, self.script = self.script, None
        return script

    # ------------------------------------------------------------------ aiohttp
    async def handle(self, request: web.Request) -> web.StreamResponse:
        if time.monotonic() < self.down_until:
            self.refused += 1
            return web.Response(status=503, text="restarting")
        ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
        await ws.prepare(request)
        self.connections += 1
        transport = request.transport
        try:
            if self.dialect == "turn":
                await self._turn(ws, transport, request.query.get("duplex") == "1")
            else:
                await self._duplex(ws, transport)
        except (ConnectionResetError, aiohttp.ClientError, RuntimeError):
            pass
        finally:
            if not ws.closed:
                await ws.close()
        return ws

    async def _opening(self, ws: web.WebSocketResponse, script: Script, created: str) -> bool:
        """Send the scripted opening; False when the session never opens."""
        if script.opening == "event_first":
            await ws.send_str(json.dumps({"type": "response.done", "response": {"id": "r0"}}))
        elif script.opening == "garbage_first":
            await ws.send_str("{not json")
        elif script.opening == "binary_first":
            await ws.send_bytes(b"\x00\xffbinary")
        elif script.opening == "close_first":
            await ws.close(code=1011, message=b"fuzz")
            return False
        elif script.opening == "silent":
            # Say nothing until the proxy gives up and closes.
            async for _ in ws:
                pass
            return False
        await ws.send_str(created)
        return True

    async def _play(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        script: Script,
        counter: Counter | None = None,
    ) -> bool:
        """Send the steps, then end as scripted; False when the socket is gone."""
        try:
            for step in script.steps:
                if step.binary is not None:
                    await ws.send_bytes(step.binary)
                else:
                    await ws.send_str(step.render(counter))
            if script.ending in ("close", "abort"):
                self.down_until = time.monotonic() + script.down_s
            if script.ending == "close":
                await ws.close(code=1000)
                return False
            if script.ending == "abort":
                if transport is not None:
                    transport.abort()
                return False
            return True
        finally:
            self.played.set()

    # ------------------------------------------------------------------ duplex
    async def _duplex(
        self, ws: web.WebSocketResponse, transport: asyncio.BaseTransport | None
    ) -> None:
        first = await ws.receive()
        if first.type != aiohttp.WSMsgType.TEXT:
            return
        opener = json.loads(first.data)
        if opener.get("type") == "session.resume":
            # This server keeps no session across sockets: the proxy opens a fresh one.
            await ws.send_str(
                json.dumps(
                    {
                        "type": "error",
                        "error": {
                            "type": "invalid_request_error",
                            "code": "session_resume_expired",
                            "message": "unknown or expired duplex session",
                        },
                    }
                )
            )
            await ws.close(code=1000)
            return
        sid = f"duplex-{uuid.uuid4().hex}"
        seq = Counter()
        created = json.dumps(
            {
                "type": "session.created",
                "event_id": f"event_{uuid.uuid4().hex}",
                "session": {
                    "id": sid,
                    "model": "m",
                    "instructions": None,
                    "capabilities": {
                        "supports_barge_in": self.dialect == "duplex",
                        "supports_playback_ack": True,
                        "supports_client_commit": True,
                        "supports_session_resume": True,
                        # It takes any number of sessions (vLLM-Omni says so when its
                        # max_sessions is above 1): the proxy counts none against it.
                        "supports_multi_session": True,
                    },
                },
                "resume_token": uuid.uuid4().hex,
            }
        )
        script = self._take() or Script()
        if not await self._opening(ws, script, created):
            self.played.set()
            return
        if not await self._play(ws, transport, script, seq):
            return
        instructions: Any = None
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            try:
                event = json.loads(msg.data)
            except ValueError:
                continue
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "session.heartbeat":
                await ws.send_str(json.dumps(seq.stamp({"type": "session.heartbeat_ack"}, sid)))
            elif kind == "session.update":
                session = event.get("session") if isinstance(event.get("session"), dict) else {}
                instructions = session.get("instructions", instructions)
                updated = {
                    "type": "session.updated",
                    "session": {"id": sid, "model": "m", "instructions": instructions},
                }
                await ws.send_str(json.dumps(seq.stamp(updated, sid)))
            elif kind in ("response.create", "input_audio_buffer.commit"):
                for frame in duplex_response(seq, sid):
                    await ws.send_str(frame)

    # ------------------------------------------------------------------ turn
    async def _turn(
        self,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
        asked_duplex: bool,
    ) -> None:
        if asked_duplex:
            await ws.send_str(json.dumps(VAD_NOT_ENABLED))
            await ws.close(code=1008)
            return
        script = self._take() or Script()
        created = json.dumps(
            {"type": "session.created", "id": f"sess-{uuid.uuid4().hex[:16]}", "created": 1}
        )
        if not await self._opening(ws, script, created):
            self.played.set()
            return
        pending: Script | None = script if script != Script() else None
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            try:
                event = json.loads(msg.data)
            except ValueError:
                continue
            if not isinstance(event, dict) or event.get("type") != "input_audio_buffer.commit":
                continue
            if event.get("final") is not True:
                continue
            if pending is not None:
                played, pending = pending, None
                if not await self._play(ws, transport, played):
                    return
                continue
            for frame in turn_answer():
                await ws.send_str(frame)


@asynccontextmanager
async def fuzz_upstream(server: FuzzUpstream) -> AsyncIterator[str]:
    """Serve ``server``; yields its ws:// realtime URL."""
    app = web.Application()
    app.router.add_get("/v1/realtime", server.handle)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


async def wait_played(upstream: FuzzUpstream, within_s: float) -> bool:
    return await asyncio.to_thread(upstream.played.wait, within_s)
