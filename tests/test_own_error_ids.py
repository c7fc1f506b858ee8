"""Every event the proxy sends on its own carries a top-level ``event_id``.

OpenAI GA types every server event with one (``RealtimeErrorEvent.event_id`` is
required), and GA clients that parse strictly (the SDK's types, pipecat's models) fail
on an ``error`` without it: the proxy's own refusals (a frame that is no JSON, an
unknown model, a draining replica) and warnings (idle, input rate) included. vLLM-Omni's
duplex server mints one for each of its errors too, so a native client gets it as well,
with the inner ``error.event_id`` still left out when it names no client event.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from proxy.app import STATE, build_app
from tests.openai_sdk_client import GA_EVENTS
from tests.servers import closed, connect, proxy, proxy_config, reference, serve_app, ws_url

# kind, the route's ga_passthrough
ROUTES = [("duplex", False), ("duplex-no-barge-in", False), ("turn", False), ("duplex", True)]


def routed(upstream: str, passthrough: bool, **sections: Any) -> Any:
    route: dict[str, Any] = {"model": "m", "upstream": upstream}
    if passthrough:
        route["ga_passthrough"] = True
    return proxy_config({}, routes=[route], **sections)


def own_id(event: dict[str, Any]) -> str:
    event_id = event.get("event_id")
    assert isinstance(event_id, str) and event_id, event
    return event_id


@pytest.mark.parametrize(("kind", "passthrough"), ROUTES)
async def test_a_ga_clients_refusal_of_a_bad_frame_is_a_ga_error_event(
    kind: str, passthrough: bool
) -> None:
    async with (
        reference(kind) as upstream,
        proxy(routed(upstream, passthrough)) as base,
        connect(ws_url(base)) as c,
    ):
        await c.until("session.created")
        ids = set()
        for bad in ("{not json", "[1]"):
            await c.ws.send_str(bad)
            err = await c.until("error")
            GA_EVENTS.validate_python(err)
            assert err["error"]["code"] == "invalid_event"
            ids.add(own_id(err))
        await c.ws.send_bytes(b"\x00binary")
        err = await c.until("error")
        GA_EVENTS.validate_python(err)
        ids.add(own_id(err))
        assert len(ids) == 3  # one of its own each


@pytest.mark.parametrize(("kind", "passthrough"), ROUTES[2:])
async def test_the_idle_warning_is_a_ga_error_event(kind: str, passthrough: bool) -> None:
    server = {"idle_timeout_s": 1.5, "idle_warning_s": 1.0}
    async with (
        reference(kind) as upstream,
        proxy(routed(upstream, passthrough, server=server)) as base,
        connect(ws_url(base)) as c,
    ):
        await c.until("session.created")
        warning = await c.until("error")
        assert warning["error"]["code"] == "session_idle_timeout"
        GA_EVENTS.validate_python(warning)
        own_id(warning)
        assert await closed(c) == 1000


async def test_an_unknown_model_is_refused_with_a_ga_error_event() -> None:
    async with reference("turn") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base, model="nope")) as c:
            err = await c.recv()
            assert err["error"]["code"] == "model_not_found"
            GA_EVENTS.validate_python(err)
            own_id(err)


async def test_a_draining_replica_refuses_with_a_ga_error_event() -> None:
    async with reference("turn") as upstream:
        app = build_app(proxy_config({"m": upstream}))
        async with serve_app(app) as base:
            app[STATE].draining = True
            async with connect(ws_url(base)) as c:
                err = await c.recv()
                assert err["error"]["code"] == "server_shutting_down"
                GA_EVENTS.validate_python(err)
                own_id(err)
                msg = await c.ws.receive(timeout=5)
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


@pytest.mark.parametrize("kind", ["duplex", "turn"])
async def test_a_native_client_gets_vllm_omnis_envelope_with_its_event_id(kind: str) -> None:
    """vLLM-Omni: ``{type, event_id, error: {type, code, message}}``, no inner
    ``event_id`` or ``param`` when they name nothing."""
    async with (
        reference(kind) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, duplex="1")) as c,
    ):
        await c.until("session.created")
        await c.ws.send_str("{not json")
        err = await c.until("error")
        own_id(err)
        assert err["error"] == {
            "type": "invalid_request_error",
            "code": "invalid_json",
            "message": "Invalid JSON event",
        }
