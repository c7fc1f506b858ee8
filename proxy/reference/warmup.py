"""The model warming up: duplex WebSocket upgrades wait until it is ready.

``api_server.py::_wait_for_duplex_warmup`` holds every duplex client before the
upgrade until the startup warm-up finishes, at most
``DUPLEX_WARMUP_CLIENT_WAIT_S`` (``entrypoints/duplex/warmup.py``), then admits
it anyway; the warm-up's own connection (``vllm_omni_warmup=1``) passes.  The
stand-in's warm-up is a delay counted from application start.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web
from aiohttp.typedefs import Handler

from proxy.reference.wire import DUPLEX_TRUE

#: ``entrypoints/duplex/warmup.py``: the longest a client is held.
CLIENT_WAIT_S = 180.0
WARMUP_DONE: web.AppKey[asyncio.Event] = web.AppKey("reference_warmup_done", asyncio.Event)


def _duplex_upgrade(request: web.Request) -> bool:
    if request.path == "/v1/duplex":
        return True
    duplex = request.query.get("duplex")
    return request.path == "/v1/realtime" and (duplex is None or duplex.lower() in DUPLEX_TRUE)


@web.middleware
async def hold_while_warming(request: web.Request, handler: Handler) -> web.StreamResponse:
    done = request.app.get(WARMUP_DONE)
    warmup_client = request.query.get("vllm_omni_warmup") == "1"
    if done is not None and not done.is_set() and not warmup_client and _duplex_upgrade(request):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), CLIENT_WAIT_S)
    return await handler(request)


def add_warmup(app: web.Application, warmup_s: float) -> None:
    """Hold duplex upgrades for ``warmup_s`` after the application starts."""
    if warmup_s <= 0:
        return
    done = asyncio.Event()
    app[WARMUP_DONE] = done
    app.middlewares.append(hold_while_warming)

    async def start(_: web.Application) -> None:
        asyncio.get_running_loop().call_later(warmup_s, done.set)

    app.on_startup.append(start)
