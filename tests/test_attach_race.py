"""An attachment the session will never serve is closed as the session ends: a resume
queued behind the session's inputs, or taken by its loop and not yet served, or
arriving after the session ended, gets the session's close code and its connection
ends (``proxy/emulated/runner.py``, ``stop``). Left waiting, each would keep its
socket and its task for good. Likewise a session still opening as its replica drains,
and a connection's parts that must end on their first cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from proxy.app import build_app
from proxy.client_io import ClientChannel
from proxy.client_queue import FrameCredits
from proxy.emulated.feeders import feed_attachment
from proxy.emulated.queue_items import Attach, FromClient
from proxy.emulated.runner import EmulatedRunner
from proxy.emulated.upstream_redial import InLoop
from proxy.metrics import Metrics
from proxy.reference.server import build_reference_app
from proxy.state import ProxyState
from tests.redis_server import RedisServer
from tests.servers import (
    closed,
    connect,
    proxy_with_state,
    reference,
    resume_of,
    serve_app,
    store_config,
    ws_url,
)


async def eventually(condition: Callable[[], bool], within_s: float = 10.0) -> None:
    for _ in range(int(within_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    assert condition()


def resumed_count(state: ProxyState) -> float:
    for metric in state.metrics.resumes.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.labels.get("outcome") == "resumed":
                return sample.value
    return 0.0


async def test_a_resume_taken_by_the_loop_as_its_session_drains_is_closed_with_1012() -> None:
    async with (
        reference("turn") as up,
        proxy_with_state(store_config(up, "memory://")) as (base, state),
        connect(ws_url(base)) as c1,
    ):
        created = await c1.until("session.created")
        [runner] = state.live.values()
        assert isinstance(runner, EmulatedRunner)
        c1_closed = asyncio.create_task(closed(c1))  # (read: its close is answered)
        # An input being handled inline holds the loop: it takes the next input (the
        # resume's Attach) and waits to handle it.
        async with runner.loop._lock:
            async with connect(ws_url(base, model=None)) as c2:
                await c2.send(resume_of(created))
                await eventually(lambda: resumed_count(state) == 1)
                c2_closed = asyncio.create_task(closed(c2))
                await runner.drain()
                assert await c2_closed == 1012, "told to resume elsewhere"
                # ...with the token it needs to (the resume rotated it).
                assert [e["type"] for e in c2.events] == ["session.resumed"]
        assert await c1_closed == 1012
        await eventually(lambda: not state.sessions)  # both connections' tasks ended


@asynccontextmanager
async def attaching_server(
    state: ProxyState, runner: EmulatedRunner
) -> AsyncIterator[tuple[str, asyncio.Event, asyncio.Event]]:
    """A socket whose server side attaches to ``runner`` (a ClientChannel, as a resume
    hands over); yields its URL, set once the attach is queued, set once it returned."""
    queued, returned = asyncio.Event(), asyncio.Event()

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        client = ClientChannel(ws, state.metrics, 8, 64, 1 << 20, request.transport)
        client.start()
        try:
            queued.set()  # (the attach is queued before it first waits)
            await runner.attach(Attach(client, [], asyncio.Event()))
            returned.set()
        finally:
            await client.stop()
        return ws

    app = web.Application()
    app.router.add_get("/", handler)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/", queued, returned


@pytest.mark.parametrize("when", ["queued", "after_the_end"])
async def test_an_attachment_the_session_never_serves_gets_its_close(when: str) -> None:
    async with (
        reference("turn") as up,
        proxy_with_state(store_config(up, "memory://")) as (base, state),
        connect(ws_url(base)) as c1,
    ):
        await c1.until("session.created")
        [runner] = state.live.values()
        assert isinstance(runner, EmulatedRunner)
        c1_closed = asyncio.create_task(closed(c1))  # (read: its close is answered)
        async with attaching_server(state, runner) as (url, queued, returned):
            if when == "after_the_end":
                await runner.stop(1011, "session ended")
                assert await c1_closed == 1011
                async with connect(url) as c2:
                    assert await closed(c2) == 1011
                    await asyncio.wait_for(returned.wait(), 10)
                return
            # An input being handled inline holds the loop; the loop takes the next
            # input and waits for it, and the attach queues behind.

            async def nothing() -> None:
                pass

            async with runner.loop._lock:
                runner.inputs.put_nowait(InLoop(nothing))
                async with connect(url) as c2:
                    await queued.wait()
                    c2_closed = asyncio.create_task(closed(c2))
                    await runner.stop(1000, "session_replaced")
                    assert await c2_closed == 1000
                    await asyncio.wait_for(returned.wait(), 10)
            assert await c1_closed == 1000


async def test_an_attachment_cancelled_as_it_ends_stays_cancelled() -> None:
    """Its feed waits for the client's reader to end; a cancellation meanwhile is the
    caller's, and is not swallowed with the reader's own."""
    client = ClientChannel(web.WebSocketResponse(), Metrics(), 8, 64, 1 << 20)
    attach = Attach(client, [], asyncio.Event())
    attach.done.set()  # it ends at once: the feed stops its reader and waits for it

    async def never(item: FromClient) -> bool:
        return False

    inputs: asyncio.Queue[object] = asyncio.Queue()
    feed = asyncio.create_task(
        feed_attachment(inputs, FrameCredits(1 << 20), never, attach, [], [])
    )
    await asyncio.sleep(0)  # the feed runs until it waits for its reader
    feed.cancel()
    await asyncio.wait({feed})
    assert feed.cancelled()


async def test_a_session_still_opening_as_its_replica_drains_does_not_outlive_it() -> None:
    """The drain ends every session alive as it starts; one whose upstream answers only
    after that is not started, where it ran on past the replica's shutdown (its tasks,
    its upstream and store connections, left for whoever ends the process)."""
    async with held_turn_dials(lambda: True) as (up, dialled, answer):
        state = ProxyState(config=store_config(up, "memory://"))
        serving = serve_app(build_app(state.config, state))
        base = await serving.__aenter__()
        async with connect(ws_url(base)) as c:
            c_closed = asyncio.create_task(closed(c))  # (read: its close is answered)
            await dialled.wait()
            shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
            await eventually(lambda: state.draining)
            answer.set()
            await shutdown
            assert await c_closed == 1012, "told to reconnect elsewhere"
        assert not state.live, "a session outlived its replica"


@pytest.mark.redis
async def test_a_session_taken_from_the_store_as_its_replica_drains_is_handed_on(
    redis_server_session: RedisServer,
) -> None:
    """The same for a resume that takes its session from the store: the session is
    drained (persisted, its lease let go) as it starts."""
    gating = False
    async with held_turn_dials(lambda: gating) as (up, dialled, answer):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            async with connect(ws_url(a)) as c1:
                created = await c1.until("session.created")
            gating = True
            state = ProxyState(config=config, replica_id="b")
            serving = serve_app(build_app(config, state))
            b = await serving.__aenter__()
            async with connect(ws_url(b, model=None)) as c2:
                await c2.send(resume_of(created))
                c2_closed = asyncio.create_task(closed(c2))
                await dialled.wait()
                shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
                await eventually(lambda: state.draining)
                answer.set()
                await shutdown
                assert await c2_closed == 1012
            assert not state.live, "a session outlived its replica"


async def test_a_client_reader_stopped_with_a_full_inbox_ends() -> None:
    """A connection's reader, cancelled (its connection is done) while its inbox is
    full and read by no one, ends: its last word (CLOSED) does not wait for room that
    never comes."""
    channels: list[ClientChannel] = []
    async with channel_server(channels, inbox=2) as url, connect(url) as c:
        for _ in range(3):  # two fill the inbox; the reader holds the third
            await c.send({"type": "input_audio_buffer.clear"})
        await eventually(lambda: bool(channels) and channels[0].inbox.full())
        [client] = channels
        stopping = asyncio.create_task(client.stop())
        done, _ = await asyncio.wait({stopping}, timeout=10)
        client.closed.set()
        stopping.cancel()  # (a stuck reader ends on a second cancellation)
        assert stopping in done, "the reader waits for room in its inbox for good"


async def test_a_connection_cancelled_while_it_stops_its_client_stays_cancelled() -> None:
    channels: list[ClientChannel] = []
    async with channel_server(channels, inbox=8) as url, connect(url):
        await eventually(lambda: bool(channels))
        [client] = channels
        stopping = asyncio.create_task(client.stop())
        await asyncio.sleep(0)  # it cancelled its tasks and waits for them to end
        stopping.cancel()
        await asyncio.wait({stopping})
        client.closed.set()
        assert stopping.cancelled(), "the cancellation was swallowed"


@asynccontextmanager
async def channel_server(channels: list[ClientChannel], inbox: int) -> AsyncIterator[str]:
    """A server whose every connection is a started ``ClientChannel`` (put in
    ``channels``, its inbox ``inbox`` frames) held open until it is closed; its URL."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        client = ClientChannel(ws, Metrics(), inbox, 64, 1 << 20, request.transport)
        client.start()
        channels.append(client)
        await client.closed.wait()
        return ws

    app = web.Application()
    app.router.add_get("/", handler)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/"


@asynccontextmanager
async def held_turn_dials(
    holding: Callable[[], bool],
) -> AsyncIterator[tuple[str, asyncio.Event, asyncio.Event]]:
    """A turn-based stand-in whose turn-based dials (after ``?duplex=1`` was refused)
    wait, while ``holding()``, until the second event is set; the first says one does.
    Its URL and the two events."""
    dialled, answer = asyncio.Event(), asyncio.Event()

    @web.middleware
    async def hold(request: web.Request, handler: Any) -> web.StreamResponse:
        if holding() and "duplex" not in request.query:
            dialled.set()
            await answer.wait()
        response: web.StreamResponse = await handler(request)
        return response

    upstream = build_reference_app("turn")
    upstream.middlewares.append(hold)
    async with serve_app(upstream) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime", dialled, answer
