"""The client's first frame: how long the handshake waits for it, and taking it.

A URL that names a model opens a session at once on vLLM-Omni; the proxy waits
``first_event_wait_ms`` for a speak-first client's ``session.update`` so that it can
open the upstream session with it (docs/protocol.md, "Opening a session"). A client
that says it will send its first event itself (vLLM-Omni's ``?autostart=0`` or
``?resume=1``; its ``DuplexClient`` always sends ``autostart=0``) is waited for as
vLLM-Omni waits for it: up to ``handshake_timeout_s`` (vLLM-Omni's 10 s), then an
``error`` ``config_timeout`` and close; and a resume of its that fails opens nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from proxy.client_frames import ClientFrame
from proxy.client_io import CLOSED, ClientChannel

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def promises_first_event(query: Mapping[str, str]) -> bool:
    """``?autostart=0`` or ``?resume=1`` (vLLM-Omni's words, its spellings): the
    client's first event opens or resumes the session, nothing opens before it."""
    autostart = query.get("autostart", "").strip().lower()
    resume = query.get("resume", "").strip().lower()
    return autostart in _FALSE or resume in _TRUE


async def next_client_frame(
    client: ClientChannel, pending: list[ClientFrame], within_s: float
) -> ClientFrame | None:
    """The next client frame within ``within_s``, kept in ``pending`` too; None on
    timeout or disconnect."""
    inbox = client.inbox
    try:
        async with asyncio.timeout(within_s):  # a scope: a cancellation stays ours
            item = await inbox.get()
    except TimeoutError:
        await asyncio.sleep(0.001)  # a late loop ran the timer before the reader
        if inbox.empty():
            return None
        item = inbox.get_nowait()
    if item is CLOSED:
        await inbox.put(CLOSED)  # keep the sentinel for later readers
        return None
    assert isinstance(item, ClientFrame)
    pending.append(item)
    return item


async def refuse_late_opening(client: ClientChannel) -> None:
    """A client that promised its first event sent none in time: vLLM-Omni's answer
    (its ``config_timeout``), then the connection closes as vLLM-Omni's does."""
    client.send_error("config_timeout", "Timeout waiting for session.update")
    await client.close(1000, "config timeout")
