"""``passthrough``: the upstream does full duplex itself; relay frames unchanged.

After the annotated ``session.created``, every frame is forwarded as the original
text in both directions ("echo the original data instead of re-serializing it").
Upstream frames are not parsed at all; client frames are parsed once, only to
refuse what is not an event (DESIGN §7) before it reaches the upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

import aiohttp

from proxy.client_io import CLOSED, ClientFrame
from proxy.upstream import UpstreamLink
from shim.capabilities import Classification

if TYPE_CHECKING:
    from proxy.pump import ClientSession

NORMAL_CLOSES = (1000, 1001)


async def run_passthrough(session: ClientSession, link: UpstreamLink, cls: Classification) -> None:
    client = session.client
    metrics = session.state.metrics
    caps = cls.upstream_capabilities or {}
    client.send_event(
        session.annotated_created(link, cls, resume=caps.get("supports_session_resume") is True)
    )
    up = link.ws
    to_client = metrics.frames.labels("upstream_to_client")
    to_client_bytes = metrics.bytes.labels("upstream_to_client")

    async def upstream_to_client() -> None:
        async for msg in up:
            if msg.type == aiohttp.WSMsgType.TEXT:
                to_client.inc()
                to_client_bytes.inc(len(msg.data))
                if not client.send_text(msg.data):
                    return
            elif msg.type == aiohttp.WSMsgType.BINARY:
                to_client.inc()
                client.send_bytes(msg.data)
            else:
                break

    async def client_to_upstream() -> None:
        for frame in session.pending:
            if frame is link.opening_event:
                continue  # already applied: it opened the upstream session
            await up.send_str(frame.raw)
        session.pending.clear()
        while True:
            item = await client.inbox.get()
            if item is CLOSED:
                return
            assert isinstance(item, ClientFrame)
            await up.send_str(item.raw)

    down = asyncio.create_task(upstream_to_client(), name="upstream-to-client")
    upw = asyncio.create_task(client_to_upstream(), name="client-to-upstream")
    try:
        done, _ = await asyncio.wait({down, upw}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (down, upw):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if down in done:
        # The upstream ended the session (or dropped): say so, close like it did.
        code = up.close_code
        if code in NORMAL_CLOSES:
            await client.close(code, "upstream closed")
        else:
            metrics.upstream_errors.labels("closed").inc()
            session.log.warning("upstream_closed", close_code=code)
            client.send_error(
                "upstream_unavailable", f"upstream closed the connection (code {code})"
            )
            await client.close(1011, "upstream closed")
    await up.close()
