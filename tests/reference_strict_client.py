"""The client side of the strict stand-in tests (``docs/fidelity.md``): a ``Peer`` that
records what it reads, a strict duplex ``backend`` and an opened ``session`` on it, a
refused open's one frame, and the shared sounds.

"Nothing happened" is shown with a sentinel (``Peer.settle``): the stand-in handles a
client's events in order and synchronously, so a ``session.heartbeat`` sent after them
is answered only after every event they caused -- anything before its
``session.heartbeat_ack`` is all there will be.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import numpy as np
from aiohttp import WSMsgType

from proxy.reference import ReferenceOptions, running_reference_backend
from shim.audio import b64encode
from tests.testaudio import chunks, silence, vowel

STRICT = ReferenceOptions(fidelity="strict", max_sessions=8)
SPEECH = vowel(1500)
QUIET = silence(1200)
SERVER_VAD = {"type": "server_vad"}


class Peer:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, object]] = []

    async def recv(self, within_s: float = 10.0) -> dict[str, object]:
        msg = await self.ws.receive(timeout=within_s)
        assert msg.type == WSMsgType.TEXT, (msg.type, msg.data, self.ws.close_code)
        event: dict[str, object] = json.loads(msg.data)
        self.events.append(event)
        return event

    async def until(self, kind: str, within_s: float = 10.0) -> dict[str, object]:
        while True:
            event = await self.recv(within_s)
            if event["type"] == kind:
                return event

    async def send(self, event: dict[str, object]) -> None:
        await self.ws.send_str(json.dumps(event))

    async def speak(self, audio: np.ndarray) -> None:
        for chunk in chunks(audio, chunk_ms=100):
            await self.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})

    async def settle(self) -> list[object]:
        """Types of every event up to the sentinel's answer (see the module docstring)."""
        start = len(self.events)
        await self.send({"type": "session.heartbeat"})
        await self.until("session.heartbeat_ack")
        return [e["type"] for e in self.events[start:-1]]

    def of(self, kind: str) -> list[dict[str, object]]:
        return [e for e in self.events if e["type"] == kind]


@asynccontextmanager
async def backend(
    options: ReferenceOptions = STRICT, kind: str = "duplex", reply_ms: int = 800
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    async with running_reference_backend(kind, reply_ms=reply_ms, options=options) as base:
        async with aiohttp.ClientSession() as http:
            yield http, base.replace("http://", "ws://") + "/v1/realtime?duplex=1&autostart=0"


@asynccontextmanager
async def session(
    http: aiohttp.ClientSession, url: str, **fields: object
) -> AsyncIterator[tuple[Peer, dict[str, object]]]:
    """Open with ``session.update`` carrying ``fields``; yields the peer and session.created."""
    async with http.ws_connect(url) as ws:
        p = Peer(ws)
        await p.send({"type": "session.update", "session": {"model": "m", **fields}})
        created = await p.recv()
        assert created["type"] == "session.created", created
        assert (await p.recv())["type"] == "session.updated"
        yield p, created


async def refusal(http: aiohttp.ClientSession, url: str, **fields: object) -> dict[str, object]:
    """The one frame an open that is refused gets, after which the socket closes."""
    async with http.ws_connect(url) as ws:
        await ws.send_str(json.dumps({"type": "session.update", "session": fields}))
        msg = await ws.receive(timeout=10)
        assert msg.type == WSMsgType.TEXT
        frame: dict[str, object] = json.loads(msg.data)
        assert frame["type"] == "error", frame
        assert (await ws.receive(timeout=10)).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
        error = frame["error"]
        assert isinstance(error, dict)
        return error


async def answered(p: Peer) -> dict[str, object]:
    """Wait for a whole answer; returns its response.done."""
    await p.until("response.created")
    return await p.until("response.done")


async def ack_all(p: Peer, done: dict[str, object]) -> None:
    response = done["response"]
    assert isinstance(response, dict)
    output = response["output"]
    assert isinstance(output, list)
    part = output[0]["content"][0]
    sent = int(part["audio_duration_ms"])
    await p.send({"type": "playback.ack", "played_ms": sent, "response_id": done["response_id"]})
    await p.until("playback.acknowledged")
