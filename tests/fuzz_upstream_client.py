"""A client of the proxy for the upstream fuzz tests: the route per mode, a reader that
keeps every event, and the checks that a session still answers (a heartbeat, a valid
``session.update``, a user turn)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pybase64

from tests.fuzz_servers import STEP_TIMEOUT_S

MODES = {
    "passthrough": "duplex",
    "barge_in_emulated": "duplex-no-barge-in",
    "duplex_emulated": "turn",
}


def native(mode: str) -> dict[str, str]:
    """A GA client over a duplex upstream is emulated; passthrough is for native clients."""
    return {"duplex": "1"} if mode == "passthrough" else {}


class Reader:
    """Reads every frame as it comes (a client that keeps up), keeps the events."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.codes: list[str] = []
        self.binary = 0
        self.changed = asyncio.Event()
        self.ended = False
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            async for msg in self.ws:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    try:
                        event = json.loads(msg.data)
                    except ValueError:
                        event = {"type": "(not json, passed through)"}
                    if not isinstance(event, dict):
                        event = {"type": "(not an object, passed through)"}
                    self.events.append(event)
                    if event.get("type") == "error" and isinstance(event.get("error"), dict):
                        self.codes.append(str(event["error"].get("code")))
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    self.binary += 1
                self.changed.set()
        finally:
            self.ended = True
            self.changed.set()

    async def until(self, pred: Any, within_s: float = STEP_TIMEOUT_S) -> bool:
        """True once ``pred(events)`` holds; False if the socket ended first."""
        async with asyncio.timeout(within_s):
            while True:
                if pred(self.events):
                    return True
                if self.ended:
                    return False
                self.changed.clear()
                await self.changed.wait()

    def count(self, kind: str) -> int:
        return sum(1 for e in self.events if e.get("type") == kind)


async def sent(ws: aiohttp.ClientWebSocketResponse, *events: dict[str, Any]) -> bool:
    """Send ``events``; False when the socket is closing (the session ended)."""
    try:
        for event in events:
            await ws.send_str(json.dumps(event))
    except (ConnectionResetError, aiohttp.ClientError):
        return False
    return True


async def user_turn(ws: aiohttp.ClientWebSocketResponse) -> bool:
    """A committed user turn and a request for its answer."""
    audio = pybase64.b64encode(b"\x20\x00" * 7200).decode()  # 300 ms
    return await sent(
        ws,
        {"type": "input_audio_buffer.append", "audio": audio},
        {"type": "input_audio_buffer.commit"},
        {"type": "response.create"},
    )


async def still_answers(
    ws: aiohttp.ClientWebSocketResponse, reader: Reader, mode: str, tag: str
) -> bool:
    """The session answers a heartbeat and a valid update; False if it ended first."""
    acks = reader.count("session.heartbeat_ack")
    if not await sent(ws, {"type": "session.heartbeat"}):
        return False
    if not await reader.until(lambda _: reader.count("session.heartbeat_ack") > acks):
        return False
    marker = f"fuzz {tag}"
    updates = reader.count("session.updated")
    if not await sent(ws, {"type": "session.update", "session": {"instructions": marker}}):
        return False

    def answered(evs: list[dict[str, Any]]) -> bool:
        # A turn-based upstream cannot take instructions: refused, the rest applied. A
        # duplex one fixes them once its model has taken a turn (an upstream
        # ``response.created`` the script sent locks it, shim/dialects/
        # relay_context_lock.py): refused as vLLM-Omni refuses it, the rest applied.
        new = [e for e in evs if e.get("type") == "session.updated"][updates:]
        locked = mode == "duplex_emulated" or any(
            e.get("type") == "error"
            and isinstance(e.get("error"), dict)
            and e["error"].get("code") == "instructions_update_unsupported"
            for e in evs
        )
        return any(
            locked
            or (isinstance(e.get("session"), dict) and e["session"].get("instructions") == marker)
            for e in new
        )

    return await reader.until(answered)
