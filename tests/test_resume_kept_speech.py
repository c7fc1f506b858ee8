"""Resume across proxy processes of speech over an answer kept as the next turn under
``interrupt_response: false`` (``shim/dialects/relay_keep_snapshot.py``): it is
answered after the answer once resumed elsewhere, and reaches each upstream session
once whatever the old owner had sent before it was killed; the upstream session the
dead owner left is ended.

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
from shim.dialects import relay_keep_snapshot
from tests.held_turn_replicas import (
    answered_after,
    audio_seconds,
    ended,
    heard_seconds,
    heard_twice,
    kept_over_the_answer,
    said,
    spoken,
    tapped_replicas,
)
from tests.resume_client import load_record, redis_url, resumed
from tests.servers import connect, tcp_link, ws_url

__all__ = ["redis_url"]

pytestmark = [pytest.mark.redis, pytest.mark.slow]


async def test_speech_kept_over_an_answer_is_answered_after_a_resume_elsewhere(
    tmp_path: Path, redis_url: str
) -> None:
    """The user speaks over the answer, which it may not interrupt: the speech is held
    as the next turn. The client's connection drops before the answer ends, and it
    resumes on another replica: the held turn still reaches the upstream, whole,
    and is answered after the answer."""
    async with tapped_replicas(tmp_path, redis_url, reply_ms=8000) as (tap, a, b):
        async with tcp_link(a.base) as link, connect(link.url(ws_url(a.base))) as c1:
            s, first = await kept_over_the_answer(c1, link.cut)
        async with asyncio.timeout(10):  # the owner checkpoints as its client leaves
            while True:
                record = await load_record(redis_url, s.sid)
                assert record is not None
                if relay_keep_snapshot.KEY in checkpoint_of(record).shim:
                    break  # the turn is held, in the store
                await asyncio.sleep(0.05)

        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            done = await answered_after(c2, first)
            s.take(c2)
        s.assert_exactly_once()
        assert done["response"]["status"] == "completed", done
        dones = [e["response"]["id"] for e in s.events if e["type"] == "response.done"]
        assert dones == [first, done["response"]["id"]], "the answer, then the turn's"
        # The upstream heard the whole turn: its labelled speech (400-2440 ms).
        assert heard_seconds(said(s.events, done["response"]["id"])) >= 2.04
        assert all(n == 0 for n in tap.sent_per_session("input_audio_buffer.commit").values())


async def test_kept_speech_the_dead_owner_released_after_its_checkpoint_is_not_sent_again(
    tmp_path: Path, redis_url: str
) -> None:
    """Speech kept over the answer; the client's connection drops; the answer ends and
    the owner sends the kept turn upstream, and is killed at once, before it
    checkpoints again. The stored snapshot still holds the kept speech: the replica
    that takes the session over must not send it to the upstream session that had it
    already."""
    async with tapped_replicas(tmp_path, redis_url, reply_ms=6000) as (tap, a, b):
        killed = asyncio.Event()

        def kill_at_the_kept_turn(no: int, ev: dict[str, Any]) -> None:
            # The client is gone and the gate held everything over the answer: speech
            # sent after the answer's end is the kept turn going upstream.
            ended = any(e.get("type") == "response.done" for e in tap.answered[no])
            if no == 0 and ended and spoken(ev) and not killed.is_set():
                os.kill(a.proc.pid, signal.SIGKILL)
                killed.set()

        tap.on_sent = kill_at_the_kept_turn
        async with tcp_link(a.base) as link, connect(link.url(ws_url(a.base))) as c1:
            s, first = await kept_over_the_answer(c1, link.cut)
        async with asyncio.timeout(30):
            await killed.wait()
        record = await load_record(redis_url, s.sid)
        assert record is not None
        assert relay_keep_snapshot.KEY in checkpoint_of(record).shim, "the store holds it"

        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            done = await answered_after(c2, first)
            # Should the kept turn go again, it goes once this answer has played out.
            await asyncio.sleep(audio_seconds(c2.events, done["response"]["id"]) + 1.0)
            s.take(c2)
        s.assert_exactly_once()
        assert done["response"]["status"] == "completed", done
        dones = [e["response"]["id"] for e in s.events if e["type"] == "response.done"]
        assert len(dones) == len(set(dones)), "each response ends once"
        assert heard_seconds(said(s.events, done["response"]["id"])) >= 2.04
        assert not heard_twice(tap), f"a turn went twice: {heard_twice(tap)}"
        assert ended(tap, 0), "the dead owner's upstream session is ended, not left running"
