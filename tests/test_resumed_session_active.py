"""A resumed session counts in the ``sessions_active`` gauge.

On the client fuzz stack (tests/fuzz_client_session.py): a duplex_emulated session
whose connection drops is resumed on a new socket, and ``/metrics`` then counts it as
one active session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import aiohttp
import pytest

from tests.fuzz_client_session import Stack, native, open_stack
from tests.fuzz_servers import STEP_TIMEOUT_S, run_bounded
from tests.servers import ws_url


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with open_stack() as opened:
        yield opened


async def cut_and_resume(base: str, mode: str) -> float:
    """Open a session, drop its connection, resume it; the active-sessions gauge then."""
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(base, model=mode, **native(mode))) as ws:
            created = json.loads((await ws.receive(timeout=STEP_TIMEOUT_S)).data)
            sid, token = created["session"]["id"], created["resume_token"]
        async with http.ws_connect(ws_url(base, model=None)) as ws:
            await ws.send_str(
                json.dumps(
                    {
                        "type": "session.resume",
                        "session_id": sid,
                        "resume_token": token,
                        "last_received_server_event_seq": 0,
                    }
                )
            )
            resumed = json.loads((await ws.receive(timeout=STEP_TIMEOUT_S)).data)
            assert resumed["type"] == "session.resumed", resumed
            async with http.get(base + "/metrics") as resp:
                text = await resp.text()
            await ws.send_str(json.dumps({"type": "session.close"}))
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("duplex_proxy_sessions_active{")
    )


def test_a_resumed_session_counts_as_active(stack: Stack) -> None:
    active = run_bounded(cut_and_resume(stack.proxy.base, "duplex_emulated"), 30)
    assert active == 1
