"""The client side of the duplex stand-in tests: a ``Peer`` that records every frame it
reads, a duplex reference ``backend`` on the lenient preset unless a test brings its own
options, an opened session (``after_turn`` has just said ``TURN``), and the readers of
what it sends (``session_of``, ``pcm``, ``resume_request``).

The backends stand in for vLLM-Omni 0.30.0's ``OmniDuplexSessionHandler`` (MiniCPM-o 4.5
profile for kind "duplex", Nemotron VoiceChat for "duplex-no-barge-in"); the behaviours
the tests expect are those ``docs/fidelity.md`` lists. The strict preset, the default,
is tested in ``tests/test_reference_strict_*.py``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import aiohttp
import numpy as np
from aiohttp import WSMsgType

from proxy.reference import ReferenceOptions, running_reference_backend
from shim.audio import b64encode
from tests.testaudio import chunks, silence, vowel

TURN = np.concatenate([vowel(700), silence(700)])
OVERLAP = np.concatenate([vowel(800), silence(700)])


class Peer:
    """A duplex client that records every frame it reads."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, object]] = []
        self.times: list[float] = []
        self.close_reason: object = None

    async def recv(self, within_s: float = 5.0) -> dict[str, object]:
        msg = await self.ws.receive(timeout=within_s)
        assert msg.type == WSMsgType.TEXT, (msg.type, msg.data, self.ws.close_code)
        event: dict[str, object] = json.loads(msg.data)
        self.events.append(event)
        self.times.append(time.monotonic())
        return event

    async def until(
        self,
        kind: str,
        within_s: float = 8.0,
        where: Callable[[dict[str, object]], bool] | None = None,
    ) -> dict[str, object]:
        deadline = time.monotonic() + within_s
        while True:
            event = await self.recv(max(0.01, deadline - time.monotonic()))
            if event["type"] == kind and (where is None or where(event)):
                return event

    async def send(self, event: dict[str, object]) -> None:
        await self.ws.send_str(json.dumps(event))

    async def speak(self, audio: np.ndarray, *, rate_hz: int = 16000) -> None:
        for chunk in chunks(audio, rate_hz=rate_hz, chunk_ms=100):
            await self.send(
                {
                    "type": "input_audio_buffer.append",
                    "audio": b64encode(chunk),
                    "sample_rate_hz": rate_hz,
                }
            )

    async def closed(self, within_s: float = 5.0) -> int | None:
        while True:
            msg = await self.ws.receive(timeout=within_s)
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
                self.close_reason = msg.extra
                return self.ws.close_code
            self.events.append(json.loads(msg.data))

    def of(self, kind: str) -> list[dict[str, object]]:
        return [e for e in self.events if e["type"] == kind]

    def types(self) -> list[object]:
        return [e["type"] for e in self.events]


@asynccontextmanager
async def backend(
    kind: str = "duplex", **kwargs: object
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    # The lenient preset unless a test brings its own options: these are the stand-in's
    # own forgiving behaviours (the strict ones are in tests/test_reference_strict_*.py).
    kwargs.setdefault("options", ReferenceOptions(fidelity="lenient"))
    async with running_reference_backend(kind, **kwargs) as base:  # type: ignore[arg-type]
        async with aiohttp.ClientSession() as http:
            yield http, base.replace("http://", "ws://")


@asynccontextmanager
async def peer(http: aiohttp.ClientSession, url: str) -> AsyncIterator[Peer]:
    async with http.ws_connect(url) as ws:
        yield Peer(ws)


async def opened(p: Peer) -> dict[str, object]:
    created = await p.recv()
    assert created["type"] == "session.created"
    updated = await p.recv()
    assert updated["type"] == "session.updated"
    return created


def session_of(created: dict[str, object]) -> dict[str, object]:
    session = created["session"]
    assert isinstance(session, dict)
    return session


def pcm(event: dict[str, object]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(str(event["delta"])), dtype="<i2")


def resume_request(created: dict[str, object], last_seen: int | None = None) -> dict[str, object]:
    """``session.resume`` for the session ``created`` opened, after ``last_seen``."""
    request: dict[str, object] = {
        "type": "session.resume",
        "session_id": session_of(created)["id"],
        "resume_token": created["resume_token"],
    }
    if last_seen is not None:
        request["last_received_server_event_seq"] = last_seen
    return request


@asynccontextmanager
async def after_turn(
    kind: str = "duplex", *, path: str = "/v1/realtime?model=m", **kwargs: object
) -> AsyncIterator[Peer]:
    """An opened session on a ``backend(kind, **kwargs)`` that has just said ``TURN``."""
    async with backend(kind, **kwargs) as (http, base), peer(http, f"{base}{path}") as p:
        await opened(p)
        await p.speak(TURN)
        yield p


def session_rid_prefix(p: Peer) -> str:
    return str(session_of(p.events[0])["id"])
