"""Keys, configs and a header-aware client for the authentication tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from proxy.auth.api_keys import hash_key
from proxy.config import Config, config_from_dict
from tests.servers import Client

KEY_A = "dpk_team-a-" + "a" * 32
KEY_B = "dpk_team-b-" + "b" * 32
METRICS_TOKEN = "metrics-" + "m" * 24


def key_entry(key_id: str, key: str, **limits: Any) -> dict[str, Any]:
    return {"id": key_id, "sha256": hash_key(key), **limits}


def auth_config(routes: dict[str, str], auth: dict[str, Any], **sections: Any) -> Config:
    data: dict[str, Any] = {
        "routes": [{"model": m, "upstream": u} for m, u in routes.items()],
        "auth": auth,
    }
    data.update(sections)
    return config_from_dict(data)


def api_keys(**extra: Any) -> dict[str, Any]:
    """Two keys: team-a may open everything, team-b only model ``b-*``."""
    return {
        "mode": "api_key",
        "keys": [key_entry("team-a", KEY_A), key_entry("team-b", KEY_B, routes=["b-*"])],
        **extra,
    }


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def key_subprotocols(key: str) -> tuple[str, ...]:
    return ("realtime", f"openai-insecure-api-key.{key}")


async def refusal(
    url: str, headers: dict[str, str] | None = None, protocols: tuple[str, ...] = ()
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """The HTTP status, JSON body and headers of an upgrade the proxy refuses."""
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, headers=headers, protocols=protocols):
                pass
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status != 101
        else:
            raise AssertionError("the upgrade was accepted")
        # The handshake error carries no body: ask again as plain HTTP for it.
        ws_headers = {
            "Connection": "Upgrade",
            "Upgrade": "websocket",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            **(headers or {}),
        }
        if protocols:
            ws_headers["Sec-WebSocket-Protocol"] = ", ".join(protocols)
        async with http.get(url.replace("ws://", "http://"), headers=ws_headers) as resp:
            return resp.status, await resp.json(), dict(resp.headers)


@asynccontextmanager
async def connect_with(
    url: str, headers: dict[str, str] | None = None, protocols: tuple[str, ...] = ()
) -> AsyncIterator[Client]:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(url, headers=headers, protocols=protocols, max_msg_size=0) as ws,
    ):
        yield Client(ws)
