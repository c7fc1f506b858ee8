"""The client side of resume tests (``docs/protocol.md``, "Resume"): a session tracked
across connections, the steps that open, talk over and resume it, the store checkpoint
to wait for, and the ``store_url`` / ``redis_url`` fixtures (import them by name).

Every helper asserts protocol facts only: events, ``server_event_seq``, ``event_id``,
content; never how long anything took.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from proxy.config import StoreConfig
from proxy.persist.checkpoint import checkpoint_of
from proxy.store.base import SessionRecord
from tests.redis_server import RedisServer
from tests.servers import Client, load_clip, silence
from tests.stores import opened_store

CLIP = "utt05_clean.wav"
GONE_OR_LOST = ("session_resume_conflict", "session_resume_denied")


@dataclass
class Tracked:
    """One client session as its client sees it, across connections."""

    sid: str
    token: str
    events: list[dict[str, Any]] = field(default_factory=list)  # sequenced, as received

    @property
    def last(self) -> int:
        return self.events[-1]["server_event_seq"] if self.events else 0

    def take(self, c: Client) -> list[dict[str, Any]]:
        """Keep what ``c`` received since the last take; return the new sequenced events."""
        start = getattr(c, "_taken", 0)
        new = [e for e in c.events[start:] if "server_event_seq" in e]
        c._taken = len(c.events)  # type: ignore[attr-defined]
        self.events += new
        return new

    def assert_exactly_once(self) -> None:
        """Every event from seq 1 exactly once, in order, with unique event ids."""
        seqs = [e["server_event_seq"] for e in self.events]
        assert seqs == list(range(1, len(seqs) + 1)), f"lost or duplicated: {seqs}"
        ids = [e["event_id"] for e in self.events]
        assert len(set(ids)) == len(ids), "event ids repeat"


async def created(c: Client) -> Tracked:
    ev = await c.until("session.created")
    return Tracked(ev["session"]["id"], ev.get("resume_token", "none was given"))


def resumable(c: Client) -> bool:
    ev = c.of("session.created")[-1]
    flag: bool = ev["session"]["capabilities"]["supports_session_resume"]
    return flag


async def speak(c: Client) -> None:
    await c.stream(load_clip(CLIP) + silence(900), realtime=False)


async def acked_turn(c: Client) -> tuple[Tracked, int]:
    """The session ``c`` opened, a turn spoken and answered and all of it acknowledged
    (applied: an update sent after the ack is answered); the session and the seq acked."""
    s = await created(c)
    await speak(c)
    await c.until("response.done", timeout=20)
    s.take(c)
    acked = s.last
    await c.send({"type": "session.event_ack", "server_event_seq": acked})
    # Applied in order: once this answers, the ack was applied.
    await c.send({"type": "session.update", "session": {"instructions": "hi"}})
    await c.until("session.updated")
    s.take(c)
    return s, acked


async def until_deltas(c: Client, n: int) -> None:
    while len(c.of("response.output_audio.delta")) < n:
        await c.until("response.output_audio.delta", timeout=20)


async def mid_answer(c: Client, deltas: int = 3) -> Tracked:
    """The session ``c`` opened, its turn said and the answer ``deltas`` audio deltas in."""
    s = await created(c)
    await speak(c)
    await until_deltas(c, deltas)
    return s


async def answered(c: Client) -> dict[str, Any]:
    """A turn said on ``c`` and answered to the end; the ``response.done``."""
    await speak(c)
    done = await c.until("response.done", timeout=20)
    assert done["response"]["status"] == "completed"
    return done


async def cut_answer_ends(c: Client, rid: str) -> dict[str, Any]:
    """The answer ``rid``, cut on its way, ends ``incomplete`` on ``c`` (never silently);
    the ``response.done``."""
    done = await c.until("response.done", timeout=20)
    assert done["response"]["id"] == rid
    assert done["response"]["status"] == "incomplete"
    return done


async def send_resume(c: Client, s: Tracked, last: int | None = None) -> dict[str, Any]:
    """``session.resume`` as the first event; the first event back."""
    await c.send(
        {
            "type": "session.resume",
            "session_id": s.sid,
            "resume_token": s.token,
            "last_received_server_event_seq": s.last if last is None else last,
        }
    )
    return await c.recv()


async def resumed(c: Client, s: Tracked, last: int | None = None) -> dict[str, Any]:
    first = await send_resume(c, s, last)
    assert first["type"] == "session.resumed", first
    assert first["session_id"] == s.sid
    assert first["resume_token"] != s.token, "the resume token rotates"
    assert "server_event_seq" not in first
    s.token = first["resume_token"]
    return first


def error_code(ev: dict[str, Any]) -> str:
    assert ev["type"] == "error", ev
    code: str = ev["error"]["code"]
    return code


async def load_record(url: str, sid: str) -> SessionRecord | None:
    async with opened_store(StoreConfig(url=url)) as store:
        return await store.load(sid)


async def wait_persisted(url: str, sid: str, seq: int = 0, acked: int = 0) -> SessionRecord:
    """Until the store's checkpoint of ``sid`` has reached ``seq`` (and ``acked``)."""
    async with asyncio.timeout(10):
        while True:
            record = await load_record(url, sid)
            if (
                record is not None
                and checkpoint_of(record).seq >= seq
                and record.acked_seq >= acked
            ):
                return record
            await asyncio.sleep(0.02)


async def reattached(base: str) -> dict[str, int]:
    """``duplex_proxy_upstream_reattach_total`` by ``how``, from the proxy's /metrics."""
    async with aiohttp.ClientSession() as http, http.get(base + "/metrics") as resp:
        text = await resp.text()
    counts: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("duplex_proxy_upstream_reattach_total{"):
            how = line.split('how="')[1].split('"')[0]
            counts[how] = int(float(line.rsplit(" ", 1)[1]))
    return counts


async def until_fresh_upstream(base: str) -> None:
    """Until the proxy has a fresh upstream session for the client."""
    for _ in range(200):
        if (await reattached(base)).get("fresh") == 1:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no fresh upstream session")


def transcript_of(events: list[dict[str, Any]], rid: str) -> str:
    """The response's transcript deltas as the client received them, joined."""
    kind = "response.output_audio_transcript.delta"
    return "".join(e["delta"] for e in events if e["type"] == kind and e["response_id"] == rid)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    server: RedisServer = request.getfixturevalue("redis_server_session")
    return server.url


@pytest.fixture
def redis_url(redis_server_session: RedisServer) -> str:
    return redis_server_session.url
