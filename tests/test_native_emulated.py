"""A vLLM-Omni-native client of a turn-based upstream (``duplex_emulated``) gets the
session vLLM-Omni's duplex server would give it.

The proxy answers for the upstream here, so each rule is the wheel's
(``docs/fidelity.md``); the upstream is the strict turn-based stand-in and the
speech the dev corpus.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from proxy.reference import ReferenceOptions
from tests.servers import (
    Client,
    connect,
    load_clip,
    proxy,
    proxy_config,
    reference,
    silence,
    ws_url,
)
from tests.test_native_relay import NATIVE, opening, pcm16k, say

pytestmark = pytest.mark.timeout(120)

SPEECH = pcm16k(load_clip("utt05_clean.wav") + silence(800))


@asynccontextmanager
async def native_session(reply_ms: int = 1000) -> AsyncIterator[Client]:
    """A native client's session through the proxy in front of the turn-based stand-in."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("turn", reply_ms=reply_ms, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening())
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "duplex_emulated"
        yield c


async def test_auto_response_answers_a_commit_that_asks_for_none() -> None:
    """vLLM-Omni answers a commit in an ``auto_response`` session whatever its
    ``response_create`` says (``engine/duplex/session/runner.py``, ``_on_commit``)."""
    async with native_session() as c:
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True, "response_create": False})
        done = await c.until("response.done", timeout=30)
    assert done["response"]["status"] == "completed"
    assert not c.of("error"), c.of("error")
