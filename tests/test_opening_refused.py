"""An upstream that refuses the opening session: what each kind of client is told.

vLLM-Omni refuses an opening in one error (``entrypoints/duplex/serving.py``, ``_open``:
its code, words and the OpenAI ``type`` its code maps to, ``protocol/duplex/errors.py``)
and then just returns: the connection closes normally (1000), whatever the error. The
proxy relays that refusal as it was said, its ``type`` included:

* a native (vLLM-Omni) client gets it as vLLM-Omni's own client would, closed 1000;
* a GA client gets the upstream's type, code, words and ``param`` too, and a close that
  says whether retrying the same could help: 1000 for ``invalid_request_error`` (the
  session asked for is what was refused), 1011 for anything else (the server failed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from openai.types.realtime import RealtimeErrorEvent

from tests.servers import closed, connect, proxy, proxy_config, serve_app, ws_url
from tests.test_native_relay import NATIVE, opening

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
