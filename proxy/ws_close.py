"""A client's WebSocket closed within a bound, or cut: a socket that takes no more
(its client stopped reading, its buffers are full) cannot take a close frame either.

A ``asyncio.timeout()`` scope, not ``wait_for``: Python 3.11's ``wait_for`` drops
the caller's cancellation when the close completes in the same loop iteration."""

from __future__ import annotations

import asyncio

from aiohttp import web


async def close_or_cut(
    ws: web.WebSocketResponse,
    transport: asyncio.Transport | None,
    code: int,
    message: bytes,
    within_s: float,
) -> None:
    """Close ``ws`` with ``code``; past ``within_s`` (or on any error) abort its
    connection."""
    try:
        async with asyncio.timeout(within_s):
            await ws.close(code=code, message=message)
    except Exception:  # TimeoutError among them; a cancellation is the caller's
        if transport is not None:
            transport.abort()
