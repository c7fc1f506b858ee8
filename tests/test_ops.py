"""Operations surface of the in-process proxy: health, readiness, metrics, store outage."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web

from proxy.app import STATE, build_app
from proxy.config import config_from_dict
from tests.metrics_scrape import scrape, value
from tests.ports import closed_port
from tests.servers import (
    Client,
    connect,
    load_clip,
    proxy,
    proxy_config,
    reference,
    serve_app,
    silence,
    ws_url,
)


async def get_json(base: str, path: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(base + path) as resp:
        assert resp.content_type == "application/json"
        body: dict[str, Any] = await resp.json()
        return resp.status, body


async def spoken_turn(c: Client) -> dict[str, Any]:
    await c.stream(load_clip("utt05_clean.wav") + silence(1000), realtime=False)
    done = await c.until("response.done", timeout=30)
    assert done["response"]["status"] == "completed", done["response"]
    assert c.of("response.output_audio.delta"), "the reply carried audio"
    return done


async def native_opening(c: Client) -> dict[str, Any]:
    """A native client's opening (server VAD asked for); its ``session.created``."""
    await c.send({"type": "session.update", "session": {"turn_detection": {"type": "server_vad"}}})
    return await c.until("session.created", timeout=10)


async def test_healthz_is_200_json() -> None:
    async with reference("duplex") as up, proxy(proxy_config({"m": up})) as base:
        status, body = await get_json(base, "/healthz")
        assert status == 200
        assert body == {"status": "ok"}


async def test_readyz_ready_then_503_when_draining() -> None:
    async with reference("duplex") as up:
        app = build_app(proxy_config({"m": up}))
        async with serve_app(app) as base:
            status, body = await get_json(base, "/readyz")
            assert status == 200, body
            assert body["status"] == "ready"
            assert body["store"] == "ok"
            assert body["draining"] is False

            app[STATE].draining = True
            status, body = await get_json(base, "/readyz")
            assert status == 503, body
            assert body["status"] == "not_ready"
            assert body["draining"] is True
            # A draining replica refuses new sessions with 1012 so clients go elsewhere.
            async with connect(ws_url(base)) as c:
                err = await c.recv()
                assert err["type"] == "error"
                assert err["error"]["code"] == "server_shutting_down"
                msg = await c.ws.receive(timeout=5)
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
                assert c.ws.close_code == 1012


async def test_metrics_count_sessions_frames_and_bytes_by_mode_and_direction() -> None:
    async with reference("duplex", reply_ms=600) as dx, reference("turn", reply_ms=600) as tb:
        async with proxy(proxy_config({"pt": dx, "em": tb})) as base:
            async with aiohttp.ClientSession() as http, http.get(base + "/metrics") as resp:
                text = await resp.text()
            assert "# TYPE duplex_proxy_sessions_total counter" in text
            before = await scrape(base)

            # A native client (?duplex=1) is relayed; it asks for server VAD itself.
            async with connect(ws_url(base, model="pt", duplex="1")) as c:
                await c.send(
                    {
                        "type": "session.update",
                        "session": {"turn_detection": {"type": "server_vad"}},
                    }
                )
                created = await c.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
                await c.until("session.updated")
                await spoken_turn(c)
            after_pt = await scrape(base)

            async with connect(ws_url(base, model="em")) as c:
                await c.send({"type": "session.update", "session": {"type": "realtime"}})
                created = await c.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "duplex_emulated"
                await spoken_turn(c)
            after_em = await scrape(base)

    total = "duplex_proxy_sessions_total"
    assert (
        value(after_pt, total, mode="passthrough") == value(before, total, mode="passthrough") + 1
    )
    assert value(after_pt, total, mode="duplex_emulated") == value(
        before, total, mode="duplex_emulated"
    )
    assert (
        value(after_em, total, mode="duplex_emulated")
        == value(after_pt, total, mode="duplex_emulated") + 1
    )
    assert value(after_em, total, mode="passthrough") == value(after_pt, total, mode="passthrough")
    # Sessions carry their route and model, both from the config.
    assert value(after_em, total, mode="duplex_emulated", route="em", model="em") == 1
    assert value(after_em, total, mode="passthrough", route="pt", model="pt") == 1

    # Each session moved frames and bytes both ways, whatever its mode.
    for name in ("duplex_proxy_frames_total", "duplex_proxy_bytes_total"):
        for direction in ("client_to_upstream", "upstream_to_client"):
            v0 = value(before, name, direction=direction)
            v1 = value(after_pt, name, direction=direction)
            v2 = value(after_em, name, direction=direction)
            assert v1 > v0, f"{name}{{direction={direction}}} did not grow in passthrough"
            assert v2 > v1, f"{name}{{direction={direction}}} did not grow in duplex_emulated"
    # A streamed clip is far more than a handful of bytes.
    assert value(after_em, "duplex_proxy_bytes_total", direction="client_to_upstream") > 100_000


async def test_active_sessions_gauge_returns_to_zero() -> None:
    # Sessions are counted, not connections: a dropped one counts until its grace ends.
    grace = {"disconnect_grace_s": 0.3}
    async with reference("turn") as up, proxy(proxy_config({"m": up}, store=grace)) as base:
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            during = await scrape(base)
            assert value(during, "duplex_proxy_sessions_active", mode="duplex_emulated") == 1
        async with asyncio.timeout(10):
            while True:
                now = await scrape(base)
                if value(now, "duplex_proxy_sessions_active", mode="duplex_emulated") == 0:
                    break
                await asyncio.sleep(0.05)


async def test_store_outage_degrades_readiness_and_disables_resume_only() -> None:
    store = {"url": f"redis://127.0.0.1:{closed_port()}/0", "timeout_s": 0.2}
    async with reference("turn", reply_ms=600) as up:
        async with proxy(proxy_config({"m": up}, store=store)) as base:
            status, body = await get_json(base, "/readyz")
            assert status == 200, "live sessions still work, so the replica stays in rotation"
            assert body["status"] == "degraded", body
            assert body["store"] == "unavailable", body
            assert body["degraded"], body

            metrics = await scrape(base)
            assert value(metrics, "duplex_proxy_store_up") == 0

            async with connect(ws_url(base, duplex="1")) as c:  # native: relayed
                created = await native_opening(c)
                caps = created["session"]["capabilities"]
                assert caps["proxy"]["mode"] == "duplex_emulated"
                assert caps["supports_session_resume"] is False
                assert "resume_token" not in created, "no token for a session nobody can resume"
                await spoken_turn(c)


async def test_store_outage_passthrough_session_does_not_advertise_resume() -> None:
    """A passthrough resume is routed through the store binding, which cannot be written.

    The session must still work, and its capabilities must not promise a resume the
    proxy cannot route: resume is unavailable and says so, and the capabilities are the
    truth about this session *through the proxy* (``docs/protocol.md``).
    """
    store = {"url": f"redis://127.0.0.1:{closed_port()}/0", "timeout_s": 0.2}
    async with reference("duplex", reply_ms=600) as up:
        async with proxy(proxy_config({"m": up}, store=store)) as base:
            async with connect(ws_url(base, duplex="1")) as c:  # native: relayed
                created = await native_opening(c)
                caps = created["session"]["capabilities"]
                assert caps["proxy"]["mode"] == "passthrough"
                await spoken_turn(c)
                assert caps["supports_session_resume"] is False, (
                    "passthrough session advertises resume while the store binding failed"
                )


async def test_readyz_reports_each_route_and_is_503_only_when_none_is_usable() -> None:
    async def loading(_: web.Request) -> web.Response:
        return web.json_response({"status": "loading"}, status=503)

    warming_app = web.Application()
    warming_app.router.add_get("/health", loading)
    down = f"ws://127.0.0.1:{closed_port()}/v1/realtime"
    async with reference("turn") as up, serve_app(warming_app) as warm:
        warm_ws = warm.replace("http://", "ws://") + "/v1/realtime"
        routes = [
            {"model": "up", "upstream": up, "max_sessions": 1},
            {"model": "down", "upstream": down},
            {"model": "warm", "upstream": warm_ws, "health_path": "/health"},
        ]
        config = config_from_dict({"auth": {"mode": "none"}, "routes": routes})
        async with proxy(config) as base:
            status, body = await get_json(base, "/readyz")
            assert status == 200, body
            assert body["routes"] == {"up": "ok", "down": "unreachable", "warm": "warming"}
            assert body["status"] == "degraded", body
            text = str(body)
            for secret in (up, down, warm_ws, "127.0.0.1"):
                assert secret not in text, "no upstream address for unauthenticated callers"
            metrics = await scrape(base)
            assert value(metrics, "duplex_proxy_route_up", route="up") == 1
            assert value(metrics, "duplex_proxy_route_up", route="down") == 0

            # The one usable route full: nothing is usable, so not ready.
            async with connect(ws_url(base, model="up")) as c:
                await c.until("session.created")
                status, body = await get_json(base, "/readyz")
                assert status == 503, body
                assert body["routes"]["up"] == "at_capacity"
                # Ended, not just dropped: a dropped session keeps its slot for its grace.
                await c.send({"type": "session.close"})
                await c.until("session.closed")
            # The session gone, the route has room again.
            async with asyncio.timeout(10):
                while True:
                    if (await get_json(base, "/readyz"))[0] == 200:
                        break
                    await asyncio.sleep(0.05)

    routes = [{"model": "a", "upstream": down}, {"model": "b", "upstream": down}]
    async with proxy(config_from_dict({"auth": {"mode": "none"}, "routes": routes})) as base:
        status, body = await get_json(base, "/readyz")
        assert status == 503, body
        assert body["routes"] == {"a": "unreachable", "b": "unreachable"}
        assert body["status"] == "not_ready" and body["draining"] is False
