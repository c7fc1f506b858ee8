"""An upstream that refuses the opening session: what each kind of client is told.

vLLM-Omni refuses an opening in one error (``entrypoints/duplex/serving.py``, ``_open``:
its code, words and the OpenAI ``type`` its code maps to, ``protocol/duplex/errors.py``)
and then just returns: the connection closes normally (1000), whatever the error. The
proxy relays that refusal as it was said, its ``type`` included:

* a native (vLLM-Omni) client gets it as vLLM-Omni's own client would, closed 1000;
* a GA client gets the upstream's code, words and ``param`` too, and a type and close
  that say whether retrying the same could help, read off the code
  (``shim/open_refusal.py``): ``invalid_request_error`` and 1000 when the session asked
  for is what was refused, ``server_error`` (or the upstream's other type) and 1011 when
  the server failed, whatever type vLLM-Omni gave a code its table does not name; a
  code the proxy does not know is taken at the upstream's word.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from openai.types.realtime import RealtimeErrorEvent

from tests.native_client_session import NATIVE, opening
from tests.servers import (
    closed,
    connect,
    proxy,
    proxy_config,
    proxy_with_state,
    serve_app,
    ws_url,
)

pytestmark = pytest.mark.timeout(60)

REFUSALS = [
    # (error.type, code, param): what vLLM-Omni refuses an opening with.
    ("invalid_request_error", "ref_audio_required", "session.ref_audio"),
    ("invalid_request_error", "invalid_duplex_runtime_config", None),
    ("server_error", "engine_error", None),
    ("server_error", "internal_error", "session"),
]
MESSAGE = "the model could not open this session"


@asynccontextmanager
async def refusing(kind: str, code: str, param: str | None) -> AsyncIterator[str]:
    """A duplex upstream that refuses every opening, vLLM-Omni's way; yields its URL."""
    err: dict[str, Any] = {"type": kind, "code": code, "message": MESSAGE}
    if param is not None:
        err["param"] = param

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()  # the opening session.update
        await ws.send_json({"type": "error", "event_id": "event_up", "error": err})
        await ws.close()  # _open returns: a normal close
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


async def told(upstream: str, native: bool) -> tuple[dict[str, Any], int | None]:
    """The error a client of the proxy is told, and its close code."""
    routes = [{"model": "m", "upstream": upstream}]
    async with proxy(proxy_config({}, routes=routes)) as base:
        query = NATIVE if native else {}
        async with connect(ws_url(base, **query)) as c:
            if native:
                await c.send(opening())
            code = await closed(c)
    assert not c.of("session.created"), "nothing opened"
    (error,) = c.of("error")
    return error, code


@pytest.mark.parametrize(("kind", "code", "param"), REFUSALS)
async def test_a_native_client_is_told_as_vllm_omni_tells_it_and_closed_normally(
    kind: str, code: str, param: str | None
) -> None:
    async with refusing(kind, code, param) as upstream:
        error, close = await told(upstream, native=True)
    assert close == 1000
    expected = {"type": kind, "code": code, "message": MESSAGE}
    assert error["error"] == expected | ({"param": param} if param else {})


@pytest.mark.parametrize(("kind", "code", "param"), REFUSALS)
async def test_a_ga_client_keeps_the_upstream_s_type_and_is_closed_by_it(
    kind: str, code: str, param: str | None
) -> None:
    async with refusing(kind, code, param) as upstream:
        error, close = await told(upstream, native=False)
    RealtimeErrorEvent.model_validate({"event_id": "event_1", **error})
    assert error["error"]["type"] == kind, error
    assert error["error"]["code"] == code, error
    assert error["error"]["param"] == param, error
    assert MESSAGE in error["error"]["message"], error
    assert close == (1000 if kind == "invalid_request_error" else 1011)


@pytest.mark.parametrize("code", ["timeout", "failed_precondition", "engine_dead"])
async def test_a_ga_client_is_closed_1011_when_the_server_failed_at_open(code: str) -> None:
    # vLLM-Omni types every code its table does not name invalid_request_error
    # (protocol/duplex/errors.py), its server failures at open included.
    async with refusing("invalid_request_error", code, None) as upstream:
        error, close = await told(upstream, native=False)
        native, native_close = await told(upstream, native=True)
    assert error["error"]["code"] == code
    assert error["error"]["type"] == "server_error", error
    assert close == 1011, "a server failure told as the client's session refused"
    assert native["error"]["type"] == "invalid_request_error", "as vLLM-Omni tells it"
    assert native_close == 1000


@pytest.mark.parametrize(
    "code",
    [
        "invalid_sliding_window_config",  # MiniCPM-o's plugin, via _control_error
        "sliding_window_update_unsupported",
        "bad_audio",
        "voice_update_after_audio_unsupported",
        "a_code_the_proxy_does_not_know",
    ],
)
async def test_a_ga_client_s_session_refused_with_a_code_unknown_is_not_a_server_failure(
    code: str,
) -> None:
    # vLLM-Omni refuses some openings with codes of a model's own: the session asked
    # for is at fault, retrying it cannot help, and a GA client told server_error and
    # 1011 would retry it for ever.
    async with refusing("invalid_request_error", code, None) as upstream:
        error, close = await told(upstream, native=False)
    assert (error["error"]["code"], error["error"]["type"]) == (code, "invalid_request_error")
    assert close == 1000, "the session's own fault told as the server's"


@asynccontextmanager
async def flat_refusing(code: str) -> AsyncIterator[str]:
    """An upstream that refuses in vLLM-Omni's flat shape, no type (api_server.py)."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()
        await ws.send_json(
            {"type": "error", "error": "Realtime API is not available", "code": code}
        )
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


async def test_a_flat_refusal_without_a_type_is_typed_by_its_code() -> None:
    async with flat_refusing("unsupported") as upstream:
        error, close = await told(upstream, native=False)
    assert error["error"] | {"event_id": None} == {
        "type": "server_error",
        "code": "unsupported",
        "message": "Realtime API is not available",
        "event_id": None,
        "param": None,
    }
    assert close == 1011
    async with flat_refusing("invalid_session_config") as upstream:
        error, close = await told(upstream, native=False)
    assert (error["error"]["type"], close) == ("invalid_request_error", 1000)
    async with flat_refusing("a_code_the_proxy_does_not_know") as upstream:
        error, close = await told(upstream, native=False)
    assert (error["error"]["type"], close) == ("invalid_request_error", 1000)


async def test_an_upstream_s_own_codes_do_not_become_metric_labels() -> None:
    codes = ["made_up_code_1", "made_up_code_2", "timeout"]
    turns = iter(codes)

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()
        err = {"type": "server_error", "code": next(turns), "message": MESSAGE}
        await ws.send_json({"type": "error", "error": err})
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        upstream = base.replace("http://", "ws://") + "/v1/realtime"
        routes = [{"model": "m", "upstream": upstream}]
        async with proxy_with_state(proxy_config({}, routes=routes)) as (url, state):
            for _ in codes:  # native clients: a GA one's opening is tried twice
                async with connect(ws_url(url, **NATIVE)) as c:
                    await c.send(opening())
                    await closed(c)
            (metric,) = state.metrics.client_errors.collect()
    counted = {s.labels["code"]: s.value for s in metric.samples if s.name.endswith("_total")}
    assert counted == {"upstream_other": 2, "timeout": 1}, counted
