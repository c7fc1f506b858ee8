"""vLLM-Omni's own ``DuplexClient`` through the proxy: the stack and the client's side
(tests/test_proxy_vllm_client*.py).

``through_proxy`` puts a strict stand-in of an upstream kind behind the proxy; ``MODES``
pairs each kind with the mode the proxy runs over it; ``play`` takes a response's
audio acking playback as it goes; ``heard_s`` reads how much the stand-in heard.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from proxy.reference import ReferenceOptions
from tests.servers import proxy, proxy_config, reference

MODES = [
    ("turn", "duplex_emulated"),
    ("duplex-no-barge-in", "barge_in_emulated"),
    ("duplex", "passthrough"),
]
IDS = [mode for _, mode in MODES]
REPLY_MS = 2000


def heard_s(transcript: str) -> float:
    """How much audio the stand-in says it heard ("I heard about 3.7 seconds ...")."""
    found = re.search(r"heard about ([0-9.]+) seconds", transcript)
    assert found, transcript
    return float(found.group(1))


@asynccontextmanager
async def through_proxy(kind: str, reply_ms: int = REPLY_MS) -> AsyncIterator[str]:
    """A strict stand-in of ``kind`` behind the proxy; yields the proxy's ws:// base."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference(kind, reply_ms=reply_ms, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        yield base.replace("http://", "ws://")


async def play(client: Any, response: Any, paced: bool = False) -> None:
    """Take the response's audio for playback, acking what was played as it goes;
    ``paced`` plays it in real time, as a speaker would."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    async for _chunk in response.audio():
        await client.ack_playback(response.played_ms, response_id=response.response_id)
        ahead = response.played_ms / 1000 - (loop.time() - start)
        if paced and ahead > 0:
            await asyncio.sleep(ahead)
    await response.wait(timeout_s=30)


async def next_response(client: Any) -> Any:
    async with asyncio.timeout(30):
        async for response in client.responses():
            return response
    raise AssertionError("the session ended before an answer")


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == kind]
