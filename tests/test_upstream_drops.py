"""An upstream that closes or drops mid-session, seen from the client: a close while the
client sends ends the client's socket cleanly, and while the upstream is redialled the
session still answers its client (the fuzzing upstream, tests/fuzz_upstream.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import aiohttp
import pytest

from tests.fuzz_servers import STEP_TIMEOUT_S, run_bounded
from tests.fuzz_upstream import FuzzUpstream, wait_played
from tests.fuzz_upstream_client import Reader, native, sent, still_answers, user_turn
from tests.fuzz_upstream_script import Script
from tests.fuzz_upstream_stack import Stack, stack
from tests.servers import ws_url

__all__ = ["stack"]  # fixtures, used by name


async def _close_while_client_sends(base: str, upstream: FuzzUpstream) -> int | None:
    """Passthrough: the upstream closes (1000) while the client keeps sending."""
    upstream.arm(Script("valid", (), "close"))
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model="passthrough", duplex="1")) as ws,
    ):
        reader = Reader(ws)
        await reader.until(lambda evs: bool(evs))
        heartbeat = json.dumps({"type": "session.heartbeat"})
        with contextlib.suppress(ConnectionResetError, aiohttp.ClientError):
            for _ in range(2000):
                await ws.send_str(heartbeat)
                await asyncio.sleep(0)
        await reader.until(lambda _: False)
        return ws.close_code


def test_an_upstream_closing_while_the_client_sends_closes_the_client_cleanly(
    stack: Stack,
) -> None:
    upstream = stack.upstreams["passthrough"]
    codes = [
        run_bounded(_close_while_client_sends(stack.proxy.base, upstream), 3 * STEP_TIMEOUT_S)
        for _ in range(10)
    ]
    assert all(code == 1000 for code in codes), codes
    assert stack.proxy.settled(stack.baseline)["clean"]


async def _heartbeat_while_down(base: str, mode: str, upstream: FuzzUpstream) -> None:
    """The upstream drops and refuses connections for a while: the session answers a
    heartbeat before any new upstream session opened, then goes on once it is back."""
    upstream.arm(Script("valid", (), "abort", down_s=8.0))
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model=mode, **native(mode)), max_msg_size=0) as ws,
    ):
        reader = Reader(ws)
        try:
            assert await reader.until(lambda evs: bool(evs)), "no session.created"
            if mode == "duplex_emulated":
                assert await user_turn(ws), "the session ended"
            assert await wait_played(upstream, STEP_TIMEOUT_S), "the upstream never got to play"
            refused = upstream.refused
            for _ in range(int(STEP_TIMEOUT_S * 100)):  # the server runs in another thread
                if upstream.refused > refused:
                    break  # the proxy is trying to reach it again
                await asyncio.sleep(0.01)
            assert upstream.refused > refused, "the proxy did not try to reach the upstream"
            opened = upstream.connections
            acks = reader.count("session.heartbeat_ack")
            assert await sent(ws, {"type": "session.heartbeat"}), "the session ended"
            assert await reader.until(lambda _: reader.count("session.heartbeat_ack") > acks), (
                reader.events[-5:]
            )
            assert upstream.connections == opened, "answered only once the upstream was back"
            # Back: the session goes on with a fresh upstream session. It answers its client
            # itself while it redials, so wait for the redial (down 8 s, tries up to 2 s apart)
            # before asking for an answer only the upstream can give.
            for _ in range(int(2 * STEP_TIMEOUT_S * 100)):  # the server runs in another thread
                if upstream.connections > opened:
                    break
                await asyncio.sleep(0.01)
            assert upstream.connections > opened, "the proxy never reached the upstream again"
            assert await still_answers(ws, reader, mode, "back"), reader.events[-5:]
            if mode == "duplex_emulated":
                done = reader.count("response.done")
                assert await user_turn(ws), "the session ended"
                assert await reader.until(lambda _: reader.count("response.done") > done)
            assert "upstream_unavailable" not in reader.codes, reader.events[-5:]
        finally:
            await ws.close()
            with contextlib.suppress(asyncio.CancelledError):
                await reader.task


@pytest.mark.parametrize("mode", ["barge_in_emulated", "duplex_emulated"])
def test_a_session_answers_its_client_while_its_upstream_is_being_redialled(
    stack: Stack, mode: str
) -> None:
    run_bounded(
        _heartbeat_while_down(stack.proxy.base, mode, stack.upstreams[mode]), 4 * STEP_TIMEOUT_S
    )
    census = stack.proxy.settled(stack.baseline)
    assert census["clean"], f"left behind after the session: {census} (baseline {stack.baseline})"
    assert stack.proxy.shim_faults() == stack.faults_before, "the shim reported a fault"
