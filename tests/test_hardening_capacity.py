"""Capacity counted in sessions (docs/protocol.md): hundreds of concurrent sessions open
in every mode, and a session in its disconnect grace holds its slot, which its resume
reuses.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from proxy.config import config_from_dict
from proxy.reference.options import ReferenceOptions
from tests.hardening_helpers import KINDS, codes
from tests.servers import closed, connect, drop, proxy, proxy_config, reference, resume_of, ws_url


@pytest.mark.parametrize("kind", KINDS)
async def test_hundreds_of_concurrent_sessions_open_in_every_mode(kind: str) -> None:
    """Past aiohttp's default connector limit (100 sockets), to an upstream deployed
    with room for them all (vLLM-Omni's own default is one session)."""
    n = 310
    async with (
        reference(kind, options=ReferenceOptions(max_sessions=n)) as upstream,
        proxy(proxy_config({"m": upstream}, server={"upstream_connect_timeout_s": 20})) as base,
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http,
    ):
        sockets = await asyncio.gather(*(http.ws_connect(ws_url(base)) for _ in range(n)))
        try:

            async def first(ws: aiohttp.ClientWebSocketResponse) -> str:
                msg = await ws.receive(timeout=60)
                return str(json.loads(msg.data)["type"])

            firsts = await asyncio.gather(*(first(ws) for ws in sockets))
            assert firsts.count("session.created") == n, sorted(set(firsts))
        finally:
            await asyncio.gather(*(ws.close() for ws in sockets))


@pytest.mark.parametrize(
    ("route", "server"), [({"max_sessions": 1}, {}), ({}, {"max_sessions": 1})]
)
async def test_a_session_in_its_grace_holds_its_slot_and_a_resume_reuses_it(
    route: dict[str, Any], server: dict[str, Any]
) -> None:
    async with reference("duplex-no-barge-in") as upstream:
        cfg = config_from_dict(
            {
                "server": server,
                "auth": {"mode": "none"},
                "routes": [{"model": "m", "upstream": upstream, **route}],
            }
        )
        async with proxy(cfg) as base:
            async with connect(ws_url(base)) as a:
                created = await a.until("session.created")
                drop(a)  # no close frame: a hang-up would give its slot away (slot_yield.py)
            # a is in its disconnect grace: it still holds its upstream session.
            async with connect(ws_url(base)) as b:
                assert await closed(b) == 1013
                assert codes(b) == ["server_at_capacity"]
                assert "retry after" in b.of("error")[0]["error"]["message"]
                assert b.ws.close_code == 1013
            async with connect(ws_url(base)) as again:
                await again.send(resume_of(created))
                first = await again.recv()
                assert first["type"] == "session.resumed", first
