"""Resume across proxy processes of a push-to-talk turn the proxy holds back from the
upstream while an answer plays (``shim/dialects/relay_wait_snapshot.py``): the turn
reaches each upstream session once and is answered once, though the old owner sent it
after its last checkpoint and was killed; and the upstream session the dead owner
left, not resumed, is ended rather than left to generate in its grace. Speech kept
over the answer: tests/test_resume_kept_speech.py.

Real Redis, ``python -m proxy serve`` replicas, the strict duplex reference backend
behind a tap (tests/held_turn_replicas.py).
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from proxy.persist.checkpoint import checkpoint_of
from shim.dialects.relay_wait_snapshot import waiting
from tests.held_turn_replicas import (
    TURN,
    answered_after,
    ended,
    heard_seconds,
    press,
    said,
    tapped_replicas,
)
from tests.resume_client import Tracked, created, load_record, redis_url, resumed, until_deltas
from tests.servers import connect, load_clip, tcp_link, ws_url

__all__ = ["redis_url"]

pytestmark = [pytest.mark.redis, pytest.mark.slow]


PTT = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None}
        },
    },
}


async def test_a_commit_the_dead_owner_sent_after_its_checkpoint_is_not_sent_again(
    tmp_path: Path, redis_url: str
) -> None:
    """The client's connection drops while its turn waits for the answer's end; the
    owner sends the turn upstream once the answer ends, and is killed at once, before
    it checkpoints again. The stored snapshot still holds the waiting turn: the
    replica that takes the session over must not send it to the upstream session
    that had it already. The answer is long (8 s), so that the owner has checkpointed
    the waiting turn, as its client left, well before the answer ends."""
    async with tapped_replicas(tmp_path, redis_url, reply_ms=8000) as (tap, a, b):
        killed = asyncio.Event()

        def kill_after_second_commit(no: int, ev: dict[str, Any]) -> None:
            commits = [e for e in tap.sent[no] if e.get("type") == "input_audio_buffer.commit"]
            if no == 0 and len(commits) == 2 and not killed.is_set():
                os.kill(a.proc.pid, signal.SIGKILL)
                killed.set()

        tap.on_sent = kill_after_second_commit
        async with tcp_link(a.base) as link, connect(link.url(ws_url(a.base))) as c1:
            s: Tracked = await created(c1)
            await c1.send(PTT)
            await c1.until("session.updated")
            await press(c1, "utt04_clean.wav")
            await until_deltas(c1, 3)
            first = c1.of("response.created")[-1]["response"]["id"]
            await press(c1, TURN)  # over the answer still generated: it waits
            await asyncio.sleep(0.05)
            s.take(c1)
            link.cut()  # the client's connection drops
        async with asyncio.timeout(10):  # the owner checkpoints as its client leaves
            while not killed.is_set():
                record = await load_record(redis_url, s.sid)
                if record is not None and waiting(checkpoint_of(record).shim):
                    break
                await asyncio.sleep(0.05)
        assert not killed.is_set(), "the answer ended before the waiting turn was stored"
        async with asyncio.timeout(20):
            await killed.wait()
        record = await load_record(redis_url, s.sid)
        assert record is not None
        assert waiting(checkpoint_of(record).shim), "the store still holds the waiting turn"

        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            done = await answered_after(c2, first)
            s.take(c2)
        s.assert_exactly_once()
        assert done["response"]["status"] == "completed", done
        dones = [e["response"]["id"] for e in s.events if e["type"] == "response.done"]
        assert len(dones) == len(set(dones)), "each response ends once"
        text = said(s.events, done["response"]["id"])
        assert abs(heard_seconds(text) - len(load_clip(TURN)) / 48000) <= 0.15, text
        commits = tap.sent_per_session("input_audio_buffer.commit")
        assert all(n <= 2 for n in commits.values()), f"a turn went twice: {commits}"
        assert ended(tap, 0), "the dead owner's upstream session is ended, not left running"
