"""A wait bounded in time gives its caller's cancellation back, even when what it
waited for completes in the same loop iteration as the cancel.

Python 3.11's ``asyncio.wait_for`` then returns the result and drops the
cancellation (fixed in 3.12): the caller goes on as if never cancelled, with the
socket it was given. The edge's bounded waits are ``asyncio.timeout()`` scopes
(``proxy/upstream.py``), which take no task of their own and let it through."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import aiohttp

from proxy.config import Route
from proxy.upstream import close_within, connect
from tests.servers import reference


class LastStep:
    """An HTTP session whose ``ws_connect`` ends with a future the test completes:
    the socket is open by then, and closed if the connect is given up on (as aiohttp
    does with its own when a connect is cancelled part-way)."""

    def __init__(self, http: aiohttp.ClientSession) -> None:
        self.http = http
        self.opened: list[aiohttp.ClientWebSocketResponse] = []
        self.open = asyncio.Event()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def ws_connect(self, *args: Any, **kwargs: Any) -> aiohttp.ClientWebSocketResponse:
        ws = await self.http.ws_connect(*args, **kwargs)
        self.opened.append(ws)
        self.open.set()
        try:
            await self.done
        except BaseException:
            await ws.close()
            raise
        return ws


async def test_a_connect_cancelled_as_it_completes_is_cancelled_and_leaves_no_socket() -> None:
    async with reference("duplex") as up, aiohttp.ClientSession() as real:
        http = LastStep(real)
        route, url = Route(model="m", upstream=up), f"{up}?duplex=1&model=m"
        task = asyncio.ensure_future(connect(cast(aiohttp.ClientSession, http), url, route, 5.0))
        async with asyncio.timeout(10):
            await http.open.wait()
        # The connect completes and its caller is cancelled, in one loop iteration.
        http.done.set_result(None)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=10)
        assert task in done
        assert task.cancelled(), "the cancellation was swallowed: the caller went on"
        (ws,) = http.opened
        assert ws.closed, "the socket the connect opened was left open"


class LastClose:
    """A socket whose close ends with a future the test completes."""

    def __init__(self) -> None:
        self.closing = asyncio.Event()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def close(self) -> bool:
        self.closing.set()
        await self.done
        return True


async def test_a_close_cancelled_as_it_completes_is_cancelled() -> None:
    ws = LastClose()
    task = asyncio.ensure_future(close_within(cast(aiohttp.ClientWebSocketResponse, ws)))
    await ws.closing.wait()
    ws.done.set_result(None)
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled(), "the cancellation was swallowed: the caller went on"
