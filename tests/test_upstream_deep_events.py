"""An upstream event nested deeper than the proxy takes (``[server] max_json_depth``, and
past what orjson parses at all): refused, still counted in the upstream's journal of
numbered events, and the session goes on (the fuzzing upstream, tests/fuzz_upstream.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import pytest

from tests.fuzz_servers import STEP_TIMEOUT_S, run_bounded
from tests.fuzz_upstream import FuzzUpstream, wait_played
from tests.fuzz_upstream_client import Reader, native, still_answers
from tests.fuzz_upstream_script import Script, Send
from tests.fuzz_upstream_stack import Stack, check_script, stack
from tests.fuzz_upstream_strategies import TURN_DONE, event_step
from tests.servers import ws_url

__all__ = ["stack"]  # fixtures, used by name


def _deep_event(depth: int) -> str:
    """rate_limits.updated with its list nested ``depth`` deep (orjson parses 1024)."""
    return (
        '{"type": "rate_limits.updated", "server_event_seq": "@SEQ@", "rate_limits": '
        + "[" * depth
        + "]" * depth
        + "}"
    )


DEEP_EVENT = _deep_event(300)


@pytest.mark.parametrize("mode", ["barge_in_emulated", "duplex_emulated"])
def test_an_upstream_event_nested_300_deep_is_refused_and_the_session_goes_on(
    stack: Stack, mode: str
) -> None:
    steps = (Send("rate_limits nested 300 deep", text=DEEP_EVENT),)
    if mode == "duplex_emulated":
        steps = (*steps, TURN_DONE)
    check_script(stack, mode, Script("valid", steps, "stay"))


async def _deep_then_more(base: str, mode: str, upstream: FuzzUpstream, depth: int) -> Reader:
    """An event nested ``depth`` deep between two others, all numbered by the upstream's
    journal: the one after it follows on, no event went missing."""
    before = {"type": "rate_limits.updated", "rate_limits": [{"name": "before the deep one"}]}
    after = {"type": "rate_limits.updated", "rate_limits": [{"name": "after the deep one"}]}
    steps = (
        event_step("before", before),
        Send("deep", text=_deep_event(depth)),
        event_step("after", after),
    )
    upstream.arm(Script("valid", steps, "stay"))
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model=mode, **native(mode)), max_msg_size=0) as ws,
    ):
        reader = Reader(ws)
        try:
            assert await reader.until(lambda evs: bool(evs)), "no session.created"
            dialled = upstream.connections
            assert await wait_played(upstream, STEP_TIMEOUT_S), "the upstream never got to play"

            def told_after(evs: list[dict[str, Any]]) -> bool:
                return any(e.get("rate_limits") == after["rate_limits"] for e in evs)

            assert await reader.until(told_after), reader.events[-5:]
            assert await still_answers(ws, reader, mode, "after the deep one"), reader.events[-5:]
            assert upstream.connections == dialled, "the upstream session was replaced"
            assert reader.codes == [], reader.events
        finally:
            await ws.close()
            with contextlib.suppress(asyncio.CancelledError):
                await reader.task
    return reader


# (passthrough relays 1100 deep as well, but this test's client cannot read it back)
@pytest.mark.parametrize(
    ("mode", "depth"),
    [("barge_in_emulated", 300), ("barge_in_emulated", 1100), ("passthrough", 300)],
)
def test_an_upstream_event_nested_deep_counts_in_the_upstreams_journal(
    stack: Stack, mode: str, depth: int
) -> None:
    """Dropped by the emulated modes (it could not be stamped for the client), it is
    still one of the upstream's numbered events: the next one is no gap, so no loss
    is suspected, nothing is replayed or redialled (passthrough relays it as it is).
    1100 deep is past what orjson parses at all."""
    upstream = stack.upstreams[mode]
    run = _deep_then_more(stack.proxy.base, mode, upstream, depth)
    reader = run_bounded(run, 4 * STEP_TIMEOUT_S)
    deep = [e for e in reader.events if e.get("type") == "rate_limits.updated"]
    assert len(deep) == (3 if mode == "passthrough" else 2), deep
    census = stack.proxy.settled(stack.baseline)
    assert census["clean"], f"left behind after the session: {census} (baseline {stack.baseline})"
    assert stack.proxy.shim_faults() == stack.faults_before, "the shim reported a fault"
