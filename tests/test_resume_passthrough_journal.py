"""Resume of a passthrough (native client) session on any replica sharing a real Redis:
the upstream keeps its session, its journal is replayed once, a re-sent client event is
dropped, and the binding follows the token back.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from typing import Any

import pytest

from tests.resume_client import created, load_record, redis_url, resumed, speak, until_deltas
from tests.servers import Client, connect, replica_pair, ws_url

__all__ = ["redis_url"]  # fixtures, used by name


# What vLLM-Omni 0.30.0's own DuplexClient opens a session with (clients/duplex.py):
# no server turn detection, answers on each commit (auto_response), and the input rate
# it sends declared. A passthrough client talks to the upstream as it is, so it says
# this itself; the strict stand-in, like the real server, answers nothing without it.
NATIVE_SESSION = {
    "turn_detection": None,
    "extra_body": {"auto_response": True},
    "sample_rate_hz": 24000,
}


async def speak_native(c: Client) -> None:
    """A native client's turn: the audio, then its end (``commit{final: true}``)."""
    await speak(c)
    await c.send({"type": "input_audio_buffer.commit", "final": True})


async def ack_heard(c: Client, events: list[dict[str, Any]], response_id: str) -> None:
    """``playback.ack`` of every audio delta of a response (the upstream owns playback
    by acks: until then the answer holds the turn and the next commit is not answered)."""
    ms = 0.0
    for e in events:
        if e.get("type") == "response.output_audio.delta" and e["response_id"] == response_id:
            ms += len(base64.b64decode(e["delta"])) / 2 * 1000 / e["sample_rate_hz"]
    await c.send(
        {
            "type": "playback.ack",
            "response_id": response_id,
            "played_ms": int(ms),
            "committed_ms": int(ms),
        }
    )


@pytest.mark.redis
async def test_passthrough_resume_on_any_replica_replays_the_upstream_journal_once(
    redis_url: str,
) -> None:
    async with (
        replica_pair("duplex", redis_url, reply_ms=3000) as (a, b),
    ):
        update = {"type": "session.update", "event_id": "evt_pt_" + secrets.token_hex(4)}
        first = {"instructions": "first", **NATIVE_SESSION}
        async with connect(ws_url(a, duplex="1")) as c1:  # a native client is relayed
            s = await created(c1)
            assert c1.of("session.created")[0]["session"]["capabilities"]["proxy"]["mode"] == (
                "passthrough"
            )
            await c1.send({**update, "session": first})
            await c1.until("session.updated")
            await speak_native(c1)
            await until_deltas(c1, 3)
            s.take(c1)
        # The relay leaves the applied client event ids in the store as it ends.
        async with asyncio.timeout(10):
            while True:
                record = await load_record(redis_url, s.sid)
                if record is not None and update["event_id"] in record.recent_event_ids:
                    break
                await asyncio.sleep(0.02)
        async with connect(ws_url(b)) as c2:
            await resumed(c2, s)
            await c2.send({**update, "session": first})  # re-sent: dropped
            done = await c2.until("response.done", timeout=20)
            assert done["response"]["status"] == "completed", "the upstream kept its session"
            await ack_heard(c2, s.events + c2.events, done["response"]["id"])
            # A field the upstream still takes after audio (its instructions are locked
            # then, as vLLM-Omni's: docs/fidelity.md, row 2b).
            await c2.send({"type": "session.update", "session": {"temperature": 0.5}})
            while c2.events[-1].get("session", {}).get("temperature") != 0.5:
                await c2.until("session.updated")
            updated = [e["session"]["temperature"] for e in c2.of("session.updated")]
            assert updated == [0.5], "the re-sent update was not applied again"
            s.take(c2)
        async with connect(ws_url(a)) as c3:  # and back: the binding followed the token
            await resumed(c3, s)
            await speak_native(c3)
            again = await c3.until("response.done", timeout=20)
            assert again["response"]["status"] == "completed"
            assert again["response"]["id"] != done["response"]["id"], "the new turn's answer"
            s.take(c3)
        seqs = [e["server_event_seq"] for e in s.events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
        ids = [e["event_id"] for e in s.events]
        assert len(set(ids)) == len(ids)
