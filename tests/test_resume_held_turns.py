"""Resume across proxy processes of a GA turn the proxy holds back from the upstream
while an answer plays: a push-to-talk turn pressed over it
(``shim/dialects/relay_wait_snapshot.py``), or speech over it kept as the next turn
under ``interrupt_response: false`` (``shim/dialects/relay_keep_snapshot.py``). The
turn reaches each upstream session once and is answered once, whatever the old owner
had sent before it died or was fenced out; and the upstream session the dead owner
left, not resumed, is ended rather than left to generate in its grace.

Real Redis, ``python -m proxy serve`` replicas (so one can be killed with SIGKILL),
the strict duplex reference backend behind a tap that sees what each of its sessions
was sent (``tests/upstream_tap.py``).
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import secrets
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from proxy.persist.checkpoint import checkpoint_of
from proxy.reference.options import ReferenceOptions
from shim.dialects import relay_keep_snapshot
from shim.dialects.relay_wait_snapshot import waiting
from tests.proxy_process import ProxyProcess, proxy_process
from tests.redis_server import RedisServer
from tests.resume_client import Tracked, created, load_record, resumed, until_deltas
from tests.servers import Client, connect, load_clip, reference, silence, tcp_link, ws_url
from tests.upstream_tap import UpstreamTap, upstream_tap

pytestmark = [pytest.mark.redis, pytest.mark.slow]

TURN = "utt05_clean.wav"
PTT = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None}
        },
    },
}


@asynccontextmanager
async def tapped_replicas(
    tmp_path: Path, redis_url: str, reply_ms: int = 3000
) -> AsyncIterator[tuple[UpstreamTap, ProxyProcess, ProxyProcess]]:
    """Replica processes "a" and "b" sharing Redis, the duplex backend behind a tap.

    The longest checkpoint interval: what the old owner sends after a checkpoint
    stays out of the store until it dies. The store's secret key lets a new owner
    resume the upstream's own session."""
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    options = ReferenceOptions(max_sessions=4)
    async with AsyncExitStack() as stack:
        up = await stack.enter_async_context(
            reference("duplex", reply_ms=reply_ms, options=options)
        )
        tap, tapped = await stack.enter_async_context(upstream_tap(up))
        store = f'secret_key = "{key}"\n'
        a, b = await slow_replicas(stack, tmp_path, redis_url, tapped, store)
        yield tap, a, b


async def slow_replicas(
    stack: AsyncExitStack, tmp_path: Path, redis_url: str, upstream: str, store: str = ""
) -> tuple[ProxyProcess, ProxyProcess]:
    """Replica processes "a" and "b" sharing Redis in front of ``upstream``, ready, at
    the longest checkpoint interval (2 s); ``store``: more ``[store]`` lines."""
    config = (
        '[server]\nlog_level = "info"\n[auth]\nmode = "none"\n'
        f'[store]\nurl = "{redis_url}"\ncheckpoint_interval_s = 2.0\n{store}'
        f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
    )
    a = await stack.enter_async_context(proxy_process(tmp_path, "a", config))
    b = await stack.enter_async_context(proxy_process(tmp_path, "b", config))
    await a.until_ready()
    await b.until_ready()
    return a, b


async def press(c: Client, clip: str) -> None:
    """One push-to-talk turn, pressed whole: appended, committed, answer asked."""
    await c.stream(load_clip(clip), realtime=False)
    await c.send({"type": "input_audio_buffer.commit"})
    await c.send({"type": "response.create"})


def heard_seconds(transcript: str) -> float:
    found = re.search(r"I heard about ([0-9.]+) seconds", transcript)
    assert found, transcript
    return float(found.group(1))


def said(events: list[dict[str, Any]], response_id: str) -> str:
    """The transcript of ``response_id``'s audio."""
    [text] = [
        e["transcript"]
        for e in events
        if e["type"] == "response.output_audio_transcript.done" and e["response_id"] == response_id
    ]
    return str(text)


async def answered_after(c: Client, previous: str) -> dict[str, Any]:
    """The ``response.done`` of a response after ``previous``."""
    while True:
        done = await c.until("response.done", timeout=20)
        if done["response"]["id"] != previous:
            return done


async def kept_over_the_answer(c1: Client, drop: Callable[[], None]) -> tuple[Tracked, str]:
    """A session that keeps speech over the answer (``KEEP``): a question, then a turn
    spoken over its answer in real time, then the client's connection drops (``drop``)
    while the answer still plays. The tracked session and the answer's response id."""
    s: Tracked = await created(c1)
    await c1.send(KEEP)
    await c1.until("session.updated")
    await c1.stream(load_clip("utt04_clean.wav") + silence(1000), realtime=False)
    await until_deltas(c1, 3)
    first = c1.of("response.created")[-1]["response"]["id"]
    await c1.stream(silence(300) + load_clip(TURN) + silence(1000))  # in real time
    s.take(c1)
    assert not c1.of("response.done"), "the answer still plays"
    drop()
    return s, first


@pytest.fixture
def redis_url(redis_server_session: RedisServer) -> str:
    return redis_server_session.url


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


KEEP = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": 24000},
                "turn_detection": {"type": "server_vad", "interrupt_response": False},
            }
        },
    },
}


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


def ended(tap: UpstreamTap, no: int) -> bool:
    """Whether the backend session socket ``no`` spoke for was closed by the proxy."""
    sid = tap.upstream_session(no)
    return sid is not None and any(
        tap.upstream_session(other) == sid and {"type": "session.close"} in events
        for other, events in enumerate(tap.sent)
    )


def spoken(ev: dict[str, Any]) -> bool:
    """Whether ``ev`` appends audio that is not digital silence."""
    return ev.get("type") == "input_audio_buffer.append" and any(base64.b64decode(str(ev["audio"])))


def audio_seconds(events: list[dict[str, Any]], response_id: str) -> float:
    """How long ``response_id``'s audio plays."""
    return sum(
        len(base64.b64decode(str(e["delta"]))) / 48000
        for e in events
        if e["type"] == "response.output_audio.delta" and e["response_id"] == response_id
    )


def heard_twice(tap: UpstreamTap) -> dict[str, int]:
    """Per backend session, how many of the appends it was sent it had been sent before."""
    seen: dict[str, set[str]] = {}
    twice: dict[str, int] = {}
    for no, events in enumerate(tap.sent):
        sid = tap.upstream_session(no)
        if sid is None:
            continue
        for ev in filter(spoken, events):
            audio = str(ev["audio"])
            if audio in seen.setdefault(sid, set()):
                twice[sid] = twice.get(sid, 0) + 1
            seen[sid].add(audio)
    return twice


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
