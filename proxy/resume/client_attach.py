"""What a won resume hands back: attach the client, ``session.resumed`` first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from proxy.connection import ClientConnection
from proxy.emulated.queue_items import Attach
from proxy.emulated.runner import EmulatedRunner

Attacher = Callable[[], Awaitable[None]]


def resumed_event(runner: EmulatedRunner, token: str) -> dict[str, Any]:
    session = runner.created_event(token, resumed=True)["session"]
    return {
        "type": "session.resumed",
        "session_id": runner.session_id,
        "session": session,
        "resume_token": token,
    }


def attacher(conn: ClientConnection, runner: EmulatedRunner, token: str, last_seq: int) -> Attacher:
    async def attach() -> None:
        first = [resumed_event(runner, token)]
        conn.told(handed=True)
        await runner.attach(Attach(conn.client, first, asyncio.Event(), last_seq))

    return attach
