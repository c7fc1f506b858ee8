"""API-key authentication before the WebSocket upgrade, on a real proxy over loopback.

Refusals are plain HTTP answers (401, 403, 429) before any upgrade; an admitted client
gets its session from a real reference backend. The ``openai`` SDK authenticates with
its own ``Authorization: Bearer``; a browser-style client with the key subprotocol.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from openai import AsyncOpenAI

from tests.auth_helpers import (
    KEY_A,
    KEY_B,
    METRICS_TOKEN,
    api_keys,
    auth_config,
    bearer,
    connect_with,
    key_entry,
    key_subprotocols,
    refusal,
)
from tests.servers import proxy, reference, ws_url

# Model names: team-b's key opens only ``b-*``.
ROUTES_EMBEDDED = {"a-demo": "embedded://turn", "b-demo": "embedded://turn"}


async def test_a_bearer_key_opens_a_session_and_the_sdk_talks_with_it() -> None:
    async with reference("turn") as up, proxy(auth_config({"m": up}, api_keys())) as base:
        async with connect_with(ws_url(base), headers=bearer(KEY_A)) as c:
            created = await c.until("session.created")
            assert created["session"]["id"].startswith("sess_")
        port = int(base.rsplit(":", 1)[1])
        async with AsyncOpenAI(
            api_key=KEY_A, websocket_base_url=f"ws://127.0.0.1:{port}/v1"
        ) as sdk:
            async with sdk.realtime.connect(model="m") as conn:
                event = await conn.recv()
                assert event.type == "session.created"


async def test_the_key_subprotocol_is_accepted_and_realtime_selected() -> None:
    async with proxy(auth_config(ROUTES_EMBEDDED, api_keys())) as base:
        url = ws_url(base, model="a-demo")
        async with connect_with(url, protocols=key_subprotocols(KEY_A)) as c:
            assert c.ws.protocol == "realtime", "the key is never echoed back"
            await c.until("session.created")
        # Without "realtime" offered nothing could be selected: refused, not half-open.
        status, body, _ = await refusal(url, protocols=(f"openai-insecure-api-key.{KEY_A}",))
        assert status == 401 and body["error"]["code"] == "invalid_credentials"
    # The same in mode "none" (which reads no key, but must not leave one half-offered).
    async with proxy(auth_config(ROUTES_EMBEDDED, {"mode": "none"})) as base:
        url = ws_url(base, model="a-demo")
        async with connect_with(url, protocols=key_subprotocols(KEY_A)) as c:
            assert c.ws.protocol == "realtime"
            await c.until("session.created")
        status, _, _ = await refusal(url, protocols=(f"openai-insecure-api-key.{KEY_A}",))
        assert status == 401


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({}, "missing_credentials"),
        (bearer("dpk_not-a-key"), "invalid_credentials"),
        ({"Authorization": f"Basic {KEY_A}"}, "invalid_credentials"),
    ],
)
async def test_missing_or_wrong_credentials_get_401_before_the_upgrade(
    headers: dict[str, str], code: str
) -> None:
    async with reference("turn") as up, proxy(auth_config({"m": up}, api_keys())) as base:
        status, body, answer = await refusal(ws_url(base), headers=headers)
        assert status == 401
        assert body["error"] == {
            "type": "authentication_error",
            "code": code,
            "message": body["error"]["message"],
        }
        assert answer["WWW-Authenticate"].startswith("Bearer")


async def test_a_route_outside_the_keys_globs_gets_403() -> None:
    async with proxy(auth_config(ROUTES_EMBEDDED, api_keys())) as base:
        status, body, _ = await refusal(ws_url(base, model="a-demo"), headers=bearer(KEY_B))
        assert status == 403 and body["error"]["code"] == "route_not_allowed"
        async with connect_with(ws_url(base, model="b-demo"), headers=bearer(KEY_B)) as c:
            await c.until("session.created")
        # A model named only in the first event is checked once it is known.
        async with connect_with(ws_url(base, model=None), headers=bearer(KEY_B)) as c:
            await c.send({"type": "session.update", "session": {"model": "a-demo"}})
            error = await c.until("error")
            assert error["error"]["code"] == "route_not_allowed"
            assert (await c.ws.receive()).type == aiohttp.WSMsgType.CLOSE
            assert c.ws.close_code == 1008


async def test_a_browser_origin_must_be_the_page_itself_or_listed() -> None:
    auth = api_keys(allowed_origins=["https://app.example.com"])
    async with proxy(auth_config(ROUTES_EMBEDDED, auth)) as base:
        url = ws_url(base, model="a-demo")
        status, body, _ = await refusal(
            url, headers={"Origin": "https://evil.example.com", **bearer(KEY_A)}
        )
        assert status == 403 and body["error"]["code"] == "origin_not_allowed"
        host = base.removeprefix("http://")
        for origin in ("https://app.example.com", f"http://{host}"):
            async with connect_with(url, headers={"Origin": origin, **bearer(KEY_A)}) as c:
                await c.until("session.created")


async def test_per_key_concurrency_and_rate_are_refused_with_429() -> None:
    auth = {
        "mode": "api_key",
        "keys": [
            key_entry("one-at-a-time", KEY_A, max_sessions=1),
            key_entry("two-a-minute", KEY_B, sessions_per_minute=2),
        ],
    }
    async with proxy(auth_config(ROUTES_EMBEDDED, auth)) as base:
        url = ws_url(base, model="a-demo")
        async with connect_with(url, headers=bearer(KEY_A)) as first:
            await first.until("session.created")
            status, body, _ = await refusal(url, headers=bearer(KEY_A))
            assert status == 429 and body["error"]["code"] == "key_session_limit"
            # Another key is not held back by this one.
            async with connect_with(url, headers=bearer(KEY_B)) as other:
                await other.until("session.created")
        # Once the first session has ended, the key may open another.
        async with asyncio.timeout(10):
            while True:
                try:
                    async with connect_with(url, headers=bearer(KEY_A)) as again:
                        await again.until("session.created")
                        break
                except aiohttp.WSServerHandshakeError as exc:
                    assert exc.status == 429
                    await asyncio.sleep(0.05)
        async with connect_with(url, headers=bearer(KEY_B)) as second:
            await second.until("session.created")
        status, body, headers = await refusal(url, headers=bearer(KEY_B))
        assert status == 429 and body["error"]["code"] == "key_rate_limit"
        assert 1 <= int(headers["Retry-After"]) <= 60


async def test_metrics_can_require_a_bearer_token() -> None:
    from proxy.auth.api_keys import hash_key

    auth = api_keys(metrics_token_sha256=hash_key(METRICS_TOKEN))
    async with proxy(auth_config(ROUTES_EMBEDDED, auth)) as base, aiohttp.ClientSession() as http:
        for headers in ({}, bearer("wrong"), bearer(KEY_A)):
            async with http.get(f"{base}/metrics", headers=headers) as resp:
                assert resp.status == 401
        async with http.get(f"{base}/metrics", headers=bearer(METRICS_TOKEN)) as resp:
            assert resp.status == 200
            assert "duplex_proxy_" in await resp.text()
        async with http.get(f"{base}/healthz") as resp:
            assert resp.status == 200, "probes need no token"


async def test_the_page_is_off_with_auth_unless_enabled_and_then_asks_for_a_key() -> None:
    async with proxy(auth_config(ROUTES_EMBEDDED, api_keys())) as base:
        async with aiohttp.ClientSession() as http, http.get(f"{base}/") as resp:
            assert resp.status == 404
    enabled = auth_config(ROUTES_EMBEDDED, api_keys(), web={"enabled": True})
    async with proxy(enabled) as base, aiohttp.ClientSession() as http:
        async with http.get(f"{base}/") as resp:
            assert resp.status == 200
            assert 'id="key"' in await resp.text()
        async with http.get(f"{base}/v1/routes") as resp:
            assert (await resp.json())["auth_required"] is True
    async with proxy(auth_config(ROUTES_EMBEDDED, {"mode": "none"})) as base:
        async with aiohttp.ClientSession() as http, http.get(f"{base}/v1/routes") as resp:
            assert (await resp.json())["auth_required"] is False
