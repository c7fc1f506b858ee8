"""A fresh upstream session in place of one the proxy lost, without colliding with it.

vLLM-Omni keeps a duplex session whose socket dropped for its disconnect grace (30 s
by default), and that session holds one of the server's ``max_sessions`` slots (1 by
default; docs/fidelity.md, row 8). When the proxy cannot get its old upstream session
back and opens a fresh one, the old one may still be there:

* where the proxy holds its resume credentials but will not use its events (the
  client is ahead of the snapshot), it ends it first: ``end_over`` resumes it and
  sends ``session.close``, which frees its slot at once;
* where it cannot (the upstream refused the resume: a journal gap, a token it no
  longer takes), ``dial_fresh`` counts the old session as holding its slot: a
  ``resource_exhausted`` answer is retried until that session's grace has run out,
  instead of failing the session on its own shadow;
* where the proxy has no credentials for it (no ``store.secret_key``: the token was
  never stored) and the old session's owner is alive, that owner ends it once it
  learns the session moved (``proxy/emulated/runner.py``, ``stop``): a takeover
  tries ``dial_fresh`` once before it moves the lease, and on ``resource_exhausted``
  moves the lease first and then waits for the slot (``proxy/resume/from_store.py``).

The retries are short, so the fresh session opens soon after the slot frees.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson

from proxy.config import Route
from proxy.upstream import (
    DEFAULT_HEARTBEAT_S,
    UpstreamLink,
    UpstreamRefused,
    UpstreamUnavailable,
    close_within,
    dial,
    resume_over,
)
from proxy.upstream_book import exhausted

# vLLM-Omni's disconnect_grace_s default: the longest a lost session holds its slot.
UPSTREAM_GRACE_S = 30.0
# A refused dial costs the upstream little (an upgrade and one error event); a short
# interval keeps a waiting client's wait close to the time the slot takes to free.
RETRY_EVERY_S = 0.25


async def dial_fresh(
    http: aiohttp.ClientSession,
    base_url: str,
    route: Route,
    opener: dict[str, Any],
    connect_timeout: float,
    classify_timeout: float,
    *,
    heartbeat_s: float = DEFAULT_HEARTBEAT_S,
    hold_s: float = UPSTREAM_GRACE_S,
) -> UpstreamLink:
    """``dial``, retrying a capacity refusal for up to ``hold_s`` (the lost session's
    grace); raises what ``dial`` raises."""
    deadline = time.monotonic() + hold_s
    while True:
        try:
            return await dial(
                http,
                base_url,
                route,
                opener,
                connect_timeout,
                classify_timeout,
                heartbeat_s=heartbeat_s,
            )
        except UpstreamRefused as exc:
            if not exhausted(exc.event) or time.monotonic() + RETRY_EVERY_S > deadline:
                raise
        await asyncio.sleep(RETRY_EVERY_S)


async def end_over(
    ws: aiohttp.ClientWebSocketResponse,
    url: str,
    session_id: str,
    resume_token: str,
    after_seq: int,
    classify_timeout: float,
) -> bool:
    """End an upstream session the proxy will not use (its slot is free again);
    whether it ended. ``ws`` is closed either way."""
    try:
        link = await resume_over(ws, url, session_id, resume_token, after_seq, classify_timeout)
    except (UpstreamUnavailable, UpstreamRefused):
        return False  # resume_over closed the socket
    try:
        async with asyncio.timeout(classify_timeout):  # a scope: a cancellation stays ours
            await link.ws.send_str(orjson.dumps({"type": "session.close"}).decode())
        # The upstream closes once the session is closed: read (and drop) its replay.
        async with asyncio.timeout(classify_timeout):
            async for _ in link.ws:
                pass
    except (TimeoutError, ConnectionError, RuntimeError, aiohttp.ClientError):
        return False
    finally:
        await close_within(link.ws)
    return True
