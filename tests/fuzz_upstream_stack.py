"""The proxy and its three fuzzing upstreams (one per mode) for the upstream fuzz tests,
and one checked episode: a scripted upstream session through the proxy, then nothing
left behind, no shim fault, and a new session on the route still working.

What must hold (docs/protocol.md): a broken opening gets ``upstream_unavailable`` and
close 1011; after a valid opening the session is either still answering or was ended
with a coded error first; never ``internal_error``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any

import aiohttp
import pytest

from tests.fuzz_servers import (
    STEP_TIMEOUT_S,
    ProxyUnderTest,
    proxy_thread,
    run_bounded,
    servers_thread,
)
from tests.fuzz_upstream import FuzzUpstream, fuzz_upstream, wait_played
from tests.fuzz_upstream_client import MODES, Reader, native, still_answers, user_turn
from tests.fuzz_upstream_script import Script
from tests.servers import proxy_config, ws_url


class Stack:
    def __init__(
        self,
        proxy: ProxyUnderTest,
        upstreams: dict[str, FuzzUpstream],
        baseline: list[str],
        faults_before: float,
    ) -> None:
        self.proxy, self.upstreams = proxy, upstreams
        self.baseline, self.faults_before = baseline, faults_before

    def __repr__(self) -> str:
        return f"Stack({self.proxy.base})"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    upstreams = {mode: FuzzUpstream(dialect) for mode, dialect in MODES.items()}
    with servers_thread(*(partial(fuzz_upstream, u) for u in upstreams.values())) as urls:
        # An upstream that never answers the upgrade looks like one warming up: the
        # proxy waits for it, but not for long here.
        pairs = zip(MODES, urls, strict=True)
        routes = [{"model": m, "upstream": u, "warmup_wait_s": 3} for m, u in pairs]
        cfg = proxy_config(
            {},
            routes=routes,
            server={
                "log_level": "critical",
                "classify_timeout_s": 1.0,
                "upstream_connect_timeout_s": 2.0,
                "handshake_timeout_s": 4.0,
            },
            store={"disconnect_grace_s": 0.3},
        )
        with proxy_thread(cfg) as proxy:
            for mode in MODES:
                run_bounded(benign(proxy.base, mode), 30)
            census = proxy.settled([], within_s=3)
            yield Stack(proxy, upstreams, census["tasks"], proxy.shim_faults())


async def benign(base: str, mode: str) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model=mode, **native(mode)), max_msg_size=0) as ws,
    ):
        reader = Reader(ws)
        assert await reader.until(lambda evs: bool(evs)), "no session.created"
        assert reader.events[0]["type"] == "session.created", reader.events[0]
        assert reader.events[0]["session"]["capabilities"]["proxy"]["mode"] == mode
        assert await still_answers(ws, reader, mode, "benign"), (
            f"a new {mode} session does not answer"
        )
        await ws.close()
        await reader.task


async def _episode(base: str, mode: str, upstream: FuzzUpstream, script: Script) -> Reader:
    upstream.arm(script)
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model=mode, **native(mode)), max_msg_size=0) as ws,
    ):
        reader = Reader(ws)
        try:
            await _drive(ws, reader, mode, upstream, script)
        finally:
            await ws.close()
            with contextlib.suppress(asyncio.CancelledError):
                await reader.task
        assert "internal_error" not in reader.codes, reader.events
        return reader


async def _drive(
    ws: aiohttp.ClientWebSocketResponse,
    reader: Reader,
    mode: str,
    upstream: FuzzUpstream,
    script: Script,
) -> None:
    # A native client is told while the proxy waits for an upstream that holds the
    # upgrade (as a warming one does): that is no answer yet.
    answers = lambda evs: [e for e in evs if e.get("type") != "session.waiting"]  # noqa: E731
    await reader.until(lambda evs: bool(answers(evs)))
    first = (answers(reader.events) or [{"type": "(nothing)"}])[0]
    if script.opening != "valid":
        # Not a session: the client hears why, and the socket closes 1011.
        assert first.get("type") == "error", first
        assert first["error"]["code"] == "upstream_unavailable", first
        await reader.until(lambda _: False)
        assert ws.close_code == 1011, ws.close_code
        return
    assert first.get("type") == "session.created", first
    # This session's own upstream connection is counted by now; a redial adds one (read
    # here: after the script plays, a quick redial may already have happened).
    dialled = upstream.connections
    if mode == "duplex_emulated":
        assert await user_turn(ws), "the session ended"
    assert await wait_played(upstream, STEP_TIMEOUT_S), "the upstream never got to play"
    alive = await still_answers(ws, reader, mode, "after")
    if alive and mode == "barge_in_emulated" and script.ending in ("close", "abort"):
        # For a GA client the proxy answers heartbeats and updates itself while it
        # redials, so "alive" proves nothing yet: the session must reach its upstream
        # again (after a restart's down time) and still answer.
        async with asyncio.timeout(script.down_s + STEP_TIMEOUT_S):
            while upstream.connections == dialled and not reader.ended:  # noqa: ASYNC110 (set by the upstream thread)
                await asyncio.sleep(0.05)
        alive = await still_answers(ws, reader, mode, "reattached")
    if not alive:
        if mode == "barge_in_emulated" and reader.count("session.replaced"):
            # The upstream said another connection took its session: only another
            # replica can, so this one stands down (shim/dialects/relay_upstream.py).
            return
        # Ended: only with a report first (a coded error), or as the upstream ended it.
        assert reader.codes or ws.close_code == 1000, (ws.close_code, reader.events[-5:])
        assert mode == "passthrough", f"{mode} ended instead of recovering: {reader.events[-5:]}"
        return
    if mode == "duplex_emulated":
        # The scripted answer has ended (every turn script ends, or its socket does),
        # and the next turn gets a complete answer from a working upstream.
        assert await reader.until(lambda _: reader.count("response.done") >= 1), "no response.done"
        last = await _next_answer(ws, reader)
        if _lost(last):
            # The script's answer can end (an upstream ``error`` ends it) before its socket
            # does: a turn sent in between went to that socket and is reported lost with
            # it. The next turn, on a new connection, is answered.
            last = await _next_answer(ws, reader)
        assert last["response"]["status"] == "completed", last


async def _next_answer(ws: aiohttp.ClientWebSocketResponse, reader: Reader) -> dict[str, Any]:
    """A new turn and the ``response.done`` that ends its answer."""
    done = reader.count("response.done")
    assert await user_turn(ws), "the session ended"
    assert await reader.until(lambda _: reader.count("response.done") > done), "next turn hangs"
    return [e for e in reader.events if e.get("type") == "response.done"][-1]


def _lost(done: dict[str, Any]) -> bool:
    details = done["response"].get("status_details") or {}
    return (details.get("error") or {}).get("code") == "upstream_lost"


def check_script(stack: Stack, mode: str, script: Script) -> None:
    run_bounded(_episode(stack.proxy.base, mode, stack.upstreams[mode], script), 4 * STEP_TIMEOUT_S)
    census = stack.proxy.settled(stack.baseline)
    assert census["clean"], f"left behind after the session: {census} (baseline {stack.baseline})"
    assert stack.proxy.shim_faults() == stack.faults_before, "the shim reported a fault"
    run_bounded(benign(stack.proxy.base, mode), 2 * STEP_TIMEOUT_S)
    assert stack.proxy.settled(stack.baseline)["clean"]
