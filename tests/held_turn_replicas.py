"""Replica processes sharing Redis in front of a tapped duplex backend, and the turns a
client holds over an answer, for the resume tests of held turns
(tests/test_resume_held_turns.py, tests/test_resume_kept_speech.py).

``tapped_replicas`` runs ``python -m proxy serve`` replicas "a" and "b" (so one can be
killed with SIGKILL) at the longest checkpoint interval, the strict duplex reference
backend behind a tap that sees what each of its sessions was sent
(``tests/upstream_tap.py``); the readers say what the upstream heard and answered.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from proxy.reference.options import ReferenceOptions
from tests.proxy_process import ProxyProcess, proxy_process
from tests.resume_client import Tracked, created, until_deltas
from tests.servers import Client, load_clip, reference, silence
from tests.upstream_tap import UpstreamTap, upstream_tap

TURN = "utt05_clean.wav"


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
