"""Warm-up (docs/protocol.md, "Capacity and warm-up"): a strict stand-in process
holds duplex upgrades while it warms up, like vLLM-Omni 0.30.0 (docs/fidelity.md,
row 9). The proxy waits for it up to the route's ``warmup_wait_s``, tells a vLLM-Omni
client with ``session.waiting`` (a GA client gets no event it does not know), and
``/readyz`` reports the route ``warming`` meanwhile, before any session too with
``readiness.upgrade_check``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from proxy.config import config_from_dict
from tests.proxy_process import cli_backend
from tests.servers import Client, connect, proxy, ws_url

WARMUP_S = 8


@asynccontextmanager
async def warming_backend(warmup_s: float) -> AsyncIterator[str]:
    """``duplex-proxy reference-backend --strict --warmup-s S`` as a process; yields
    its realtime URL once it listens (its upgrades are held until it is warm)."""
    options = ("--strict", "--max-sessions", "3", "--warmup-s", str(warmup_s))
    async with cli_backend("duplex-no-barge-in", *options) as backend:
        yield f"ws://127.0.0.1:{backend.port}/v1/realtime"


async def readyz(base: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(base + "/readyz") as resp:
        body: dict[str, Any] = await resp.json()
        return resp.status, body


async def first_events_until_created(c: Client) -> list[str]:
    await c.until("session.created", timeout=60)
    return [e["type"] for e in c.events]


async def test_a_warming_upstream_is_waited_for_the_client_told_and_readyz_says_warming() -> None:
    async with warming_backend(WARMUP_S) as up:
        cfg = config_from_dict(
            {
                "auth": {"mode": "none"},
                "server": {"upstream_connect_timeout_s": 1},
                "readiness": {"upgrade_check": True, "check_interval_s": 0.5},
                "routes": [
                    {"model": "m", "upstream": up},
                    {"model": "impatient", "upstream": up, "warmup_wait_s": 0.5},
                ],
            }
        )
        async with proxy(cfg) as base:
            # Before any session: the check's own upgrade is held.
            status, body = await readyz(base)
            assert body["routes"] == {"m": "warming", "impatient": "warming"}, body
            assert status == 503
            async with (
                connect(ws_url(base, duplex="1")) as native,
                connect(ws_url(base)) as ga,
                connect(ws_url(base, model="impatient")) as impatient,
                connect(ws_url(base, waiting_events="1")) as asked,
            ):
                waiting = await native.until("session.waiting", timeout=30)
                assert waiting["reason"] == "upstream_warming_up"
                assert waiting["max_wait_ms"] == 180_000  # vLLM-Omni's own hold, the default
                status, body = await readyz(base)
                assert body["routes"]["m"] == "warming", body
                assert status == 503, "no route usable while its only upstream warms up"
                # A route that waits less gives up, with the usual error.
                error = await impatient.until("error", timeout=30)
                assert error["error"]["code"] == "upstream_unavailable"
                native_seen, ga_seen, asked_seen = await asyncio.gather(
                    first_events_until_created(native),
                    first_events_until_created(ga),
                    first_events_until_created(asked),
                )
                for seen in (native_seen, asked_seen):
                    assert seen[0] == "session.waiting" and seen[-1] == "session.created"
                assert ga_seen == ["session.created"], "a GA client gets no unknown event"
                async with asyncio.timeout(10):  # the next check's upgrade is answered
                    while True:
                        if (await readyz(base))[1]["routes"]["m"] == "ok":
                            break
                        await asyncio.sleep(0.1)
