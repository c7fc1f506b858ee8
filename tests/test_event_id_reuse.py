"""A client ``event_id`` reused on one connection is applied each time.

GA sets no rule on ``event_id``s (an optional tag), and neither OpenAI nor vLLM-Omni
drops a repeated one. The proxy drops only what a client re-sends on a new connection
of its session (``shim/journal.py``, ``RecentIds``; tests/test_resume_acks.py): a client
that tags every append alike, or counts its ids afresh, is heard.
"""

from __future__ import annotations

import pybase64
import pytest

from tests.servers import (
    load_clip,
    proxied_client,
    silence,
)

pytestmark = pytest.mark.timeout(90)

KINDS = [("turn", "duplex_emulated"), ("duplex-no-barge-in", "barge_in_emulated")]


@pytest.mark.parametrize(("kind", "mode"), KINDS, ids=[m for _, m in KINDS])
async def test_appends_all_tagged_alike_are_heard(kind: str, mode: str) -> None:
    speech = load_clip("utt05_clean.wav") + silence(1200)
    step = 24000 * 2 * 20 // 1000
    async with proxied_client(kind, reply_ms=400) as c:
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        for i in range(0, len(speech), step):
            audio = pybase64.b64encode(speech[i : i + step]).decode()
            await c.send(
                {"type": "input_audio_buffer.append", "event_id": "evt_append", "audio": audio}
            )
        await c.until("input_audio_buffer.speech_started")
        await c.until("response.done", timeout=30)
        assert not c.of("error"), c.of("error")


async def test_updates_with_one_id_are_each_applied() -> None:
    async with proxied_client("turn") as c:
        await c.until("session.created")
        for threshold in (0.6, 0.7):
            vad = {"type": "server_vad", "threshold": threshold}
            update = {"type": "realtime", "audio": {"input": {"turn_detection": vad}}}
            await c.send({"type": "session.update", "event_id": "evt_1", "session": update})
            told = await c.until("session.updated")
            assert told["session"]["audio"]["input"]["turn_detection"]["threshold"] == threshold
