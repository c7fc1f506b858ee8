"""What a client refused at an upstream's capacity is told, and what the proxy then reports
of its routes and the upstream's refusals (``/readyz``, ``/metrics``), for the capacity
tests."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.servers import Client


def refused_upstream_full(c: Client) -> dict[str, Any]:
    """The one error a refused client got: upstream_at_capacity with a retry hint."""
    errors = c.of("error")
    assert [e["error"]["code"] for e in errors] == ["upstream_at_capacity"], errors
    error: dict[str, Any] = errors[0]["error"]
    assert error["type"] == "rate_limit_error"
    assert "retry after" in error["message"]
    assert c.ws.close_code == 1013
    return error


async def refused_count(base: str) -> int:
    """``duplex_proxy_upstream_errors_total{kind="refused"}``: refusals the upstream sent."""
    async with aiohttp.ClientSession() as http, http.get(base + "/metrics") as resp:
        text = await resp.text()
    for line in text.splitlines():
        if line.startswith("duplex_proxy_upstream_errors_total{") and 'kind="refused"' in line:
            return int(float(line.rsplit(" ", 1)[1]))
    return 0


async def readyz_routes(base: str) -> dict[str, str]:
    async with aiohttp.ClientSession() as http, http.get(base + "/readyz") as resp:
        body: dict[str, Any] = await resp.json()
    routes: dict[str, str] = body["routes"]
    return routes
