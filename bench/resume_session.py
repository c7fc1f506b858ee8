"""One resume-bench client session: it speaks, drops its connection (a clean WebSocket
close, or the TCP connection aborted with no close frame), resumes on a random replica,
and checks every server event it gets (``bench/resume.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import socket
import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pybase64
from processes import resume_event

CHUNK_MS = 100
RATE = 24000
RECV_TIMEOUT_S = 20.0
MARK_SILENCE_MS = 500  # + the turn: each turn's mark (see ``_mark``)
# Each turn's audio is a whole number of these (100 ms chunks, 32 ms VAD windows at
# 16 kHz): every turn's clip starts at the same phase of the proxy's VAD and resampler.
TURN_GRID_MS = 800


# ---------------------------------------------------------------------- one session


def _mark_value(ev: dict[str, Any]) -> int | None:
    """The turn detection's silence duration a ``session.updated`` reports."""
    session = ev.get("session") or {}
    detection = ((session.get("audio") or {}).get("input") or {}).get("turn_detection") or {}
    value = detection.get("silence_duration_ms") if isinstance(detection, dict) else None
    return value if isinstance(value, int) else None


@dataclass
class Answer:
    """One response as the client got it: its audio (each delta once, by seq) and whether
    the session moved while it streamed."""

    response_id: str
    turn: int
    item_id: str = ""
    audio: bytearray = field(default_factory=bytearray)
    status: str | None = None
    truncated: int = 0
    moves: int = 0  # drops while it streamed (created, not yet done)
    moves_other: int = 0
    seams: list[int] = field(default_factory=list)  # samples it had at each drop


@dataclass
class Outcome:
    kind: str
    turns: int = 0
    disconnects: int = 0
    resumes: int = 0
    resumes_other: int = 0
    aborts: int = 0  # drops that aborted the TCP connection (no close frame)
    resumes_after_abort: int = 0
    resumes_retried: int = 0  # refused as unavailable right now, and tried again
    resumes_token_given: int = 0  # ... refused during the token's rotation
    resume_ms: list[float] = field(default_factory=list)
    resume_ms_other: list[float] = field(default_factory=list)
    slow: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    audio_deltas: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    conflicting: int = 0
    updates_sent: int = 0
    updates_resent: int = 0
    applied: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    clip: str = ""
    answers: list[Answer] = field(default_factory=list)
    overlaps: list[dict[str, Any]] = field(default_factory=list)


RESUME_TRIES = 5
RETRY = {"session_resume_unavailable", "server_shutting_down"}  # worth another try


class ResumeRefused(Exception):
    pass


class Session:
    """One client session, across as many connections as its disconnects need.

    A reader task takes every event as it arrives (as a real client does) and checks
    it; it is also the one that drops the connection at the chosen event and resumes.
    The turn task meanwhile speaks, waits for the answer, and acks.
    """

    def __init__(
        self,
        idx: int,
        kind: str,
        bases: list[str],
        clip: tuple[str, bytes],
        quota: int,
        seed: int,
        pace: float,
        abort_share: float = 0.0,
    ) -> None:
        self.idx = idx
        self.pace = pace
        self.kind = kind
        self.bases = bases
        self.clip_name, self.clip = clip
        self.quota = quota
        self.abort_share = abort_share
        self.rng = random.Random(seed * 1_000_003 + idx)
        self.out = Outcome(kind, clip=self.clip_name)
        self.by_id: dict[str, Answer] = {}  # response id -> its answer
        self.by_item: dict[str, Answer] = {}  # output item id -> its answer
        self.dropping: asyncio.Task[None] | None = None  # a drop the turn task began
        self.trace: list[str] = []  # seq and type of each event, and each drop
        self.audio_at = 0.0  # when the last audio delta came
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.connected = asyncio.Event()  # clear while the reader reconnects
        self.changed = asyncio.Event()  # the reader took an event (or ended)
        self.reader: asyncio.Task[None] | None = None
        self.replica = 0
        self.sid = ""
        self.token = ""
        self.last = 0  # highest seq received
        self.expect = 1  # next seq this connection must deliver
        self.seen: dict[int, tuple[str, str]] = {}  # seq -> (event_id, text digest)
        self.ids: set[str] = set()
        self.marks: dict[str, dict[str, Any]] = {}  # event_id -> the session.update
        self.mark_of: dict[int | None, str] = {}  # silence duration -> the mark's event_id
        self.unanswered: list[str] = []  # mark event ids with no session.updated seen
        self.answered_last: str | None = None
        self.done_seen = 0
        self.cut: int | None = None  # drop the connection after this many response events
        self.in_response = 0
        self.finishing = False
        self.aborted = False  # the last drop was an abort

    # ------------------------------------------------------------------ wire
    async def _connect(self, replica: int, query: str) -> aiohttp.ClientWebSocketResponse:
        assert self.http is not None
        self.replica = replica
        return await self.http.ws_connect(f"{self.bases[replica]}?{query}", max_msg_size=0)

    async def send(self, event: dict[str, Any]) -> None:
        """Send on the current connection; what a dropped connection swallows is lost."""
        try:
            async with asyncio.timeout(RECV_TIMEOUT_S * 2):
                await self.connected.wait()
        except TimeoutError:
            raise ConnectionError("never connected again (the resume failed)") from None
        assert self.ws is not None
        with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
            await self.ws.send_str(json.dumps(event))

    async def recv(self) -> dict[str, Any]:
        assert self.ws is not None
        msg = await self.ws.receive(timeout=RECV_TIMEOUT_S)
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"socket ended ({msg.type.name}, {self.ws.close_code})")
        ev: dict[str, Any] = json.loads(msg.data)
        seq = ev.get("server_event_seq")
        if isinstance(seq, int):
            self._check(seq, ev, msg.data)
        return ev

    def _check(self, seq: int, ev: dict[str, Any], text: str) -> None:
        """Exactly once, in order: what this connection must deliver next is ``expect``."""
        digest = (str(ev.get("event_id")), hashlib.sha1(text.encode()).hexdigest())
        if seq in self.seen:
            self.out.duplicated += 1
            if self.seen[seq] != digest:
                self.out.conflicting += 1
            return
        if seq != self.expect:
            self.out.out_of_order += 1
            if seq > self.expect:
                self.out.lost += seq - self.expect
        if digest[0] in self.ids:
            self.out.duplicated += 1  # the same event again under another seq
        self.ids.add(digest[0])
        self.seen[seq] = digest
        self.last = max(self.last, seq)
        self.expect = seq + 1
        self.out.events += 1
        kind = ev.get("type")
        self.trace.append(f"{seq} {kind}")
        self._answer(kind, ev)
        if kind == "response.output_audio.delta":
            self.out.audio_deltas += 1
            self.audio_at = time.monotonic()
        elif kind == "response.done":
            self.done_seen += 1
        elif kind == "session.updated":
            eid = self.mark_of.get(_mark_value(ev))
            if eid is not None:
                self.out.applied[eid] += 1
                if eid in self.unanswered:
                    self.unanswered.remove(eid)
                self.answered_last = eid

    def _answer(self, kind: Any, ev: dict[str, Any]) -> None:
        """Keep each response's audio and end as the client got them (once each, by seq)."""
        if kind == "response.created":
            rid = str((ev.get("response") or {}).get("id"))
            self.by_id[rid] = Answer(rid, self.out.turns)
            self.out.answers.append(self.by_id[rid])
        elif kind == "response.output_audio.delta":
            a = self.by_id.get(str(ev.get("response_id")))
            if a is not None:
                a.item_id = str(ev.get("item_id"))
                self.by_item[a.item_id] = a
                a.audio += pybase64.b64decode(ev.get("delta") or "")
        elif kind == "response.output_item.added":
            a = self.by_id.get(str(ev.get("response_id")))
            if a is not None:
                a.item_id = str((ev.get("item") or {}).get("id"))
                self.by_item[a.item_id] = a
        elif kind == "response.done":
            a = self.by_id.get(str((ev.get("response") or {}).get("id")))
            if a is not None:
                a.status = str((ev.get("response") or {}).get("status"))
        elif kind == "conversation.item.truncated":
            a = self.by_item.get(str(ev.get("item_id")))
            if a is not None:
                a.truncated += 1

    # ------------------------------------------------------------------ reader
    async def _read(self) -> None:
        try:
            while True:
                try:
                    ev = await self.recv()
                except ConnectionError:
                    if self.finishing:
                        return
                    if self.dropping is not None:  # the turn task dropped it
                        await self.dropping
                        self.dropping = None
                        await self._resume()
                        continue
                    raise
                if str(ev.get("type")).startswith("response.") and "server_event_seq" in ev:
                    self.in_response += 1
                    if self.cut is not None and self.in_response >= self.cut:
                        await self.disconnect_and_resume()
                        # Sometimes drop again in the middle of the replay.
                        self.cut = self._next_cut(again=True)
                        self.in_response = 0
                self.changed.set()
        finally:
            self.changed.set()

    async def wait_until(self, done: Any) -> None:
        async with asyncio.timeout(RECV_TIMEOUT_S * 2):
            while not done():
                assert self.reader is not None
                if self.reader.done():
                    self.reader.result()  # raises what ended it
                    raise ConnectionError("reader ended")
                self.changed.clear()
                await self.changed.wait()

    def drop_soon(self) -> None:
        """Drop the connection now, from outside the reader (which then resumes)."""
        if self.connected.is_set() and self.dropping is None and not self.finishing:
            self.dropping = asyncio.ensure_future(self._drop())

    async def _drop(self) -> None:
        """A clean WebSocket close, or (``abort_share`` of drops) the TCP connection
        aborted: no close frame, a reset, as a lost network or a killed client leaves it."""
        ws = self.ws
        assert ws is not None
        self.connected.clear()
        self.out.disconnects += 1
        self.aborted = self.rng.random() < self.abort_share
        how = "abort" if self.aborted else "close"
        quiet = time.monotonic() - self.audio_at
        self.trace.append(f"-- drop after {self.last} ({how}; last audio {quiet:.2f} s before)")
        for a in self.by_id.values():
            if a.status is None:
                a.moves += 1
                a.seams.append(len(a.audio) // 2)
        if not self.aborted:
            await ws.close()
            return
        self.out.aborts += 1
        conn = ws._response.connection  # aiohttp keeps the transport there
        transport = conn.transport if conn is not None else None
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # linger 0: the close is a reset, not a FIN
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()

    async def disconnect_and_resume(self) -> None:
        await self._drop()
        await self._resume()

    async def _resume(self) -> None:
        replica = self.rng.randrange(len(self.bases))
        other = replica != self.replica
        t0 = time.perf_counter()
        tokens = [self.token]  # to try in turn: the store holds one of them
        for attempt in range(1, RESUME_TRIES + 1):
            self.ws = await self._connect(replica, "")
            await self.ws.send_str(json.dumps(resume_event(self.sid, tokens[0], self.last)))
            first = await self.recv()
            code = (first.get("error") or {}).get("code")
            if code == "session_resume_denied" and len(tokens) > 1:
                tokens.pop(0)  # the rotation a refusal told of never landed
            elif first.get("type") != "error" or code not in RETRY or attempt == RESUME_TRIES:
                break
            else:
                # "Right now": a store slow under load, a replica draining. A client
                # waits and tries again, as docs/protocol.md has it; the session is
                # still there. A refusal in the middle of the token's rotation names the
                # new token: the store holds it or the one just sent.
                if isinstance(given := first.get("resume_token"), str):
                    tokens = [given, tokens[0]]
                    self.out.resumes_token_given += 1
                self.out.resumes_retried += 1
                self.trace.append(f"-- resume refused ({code}), again")
            await self.ws.close()
            await asyncio.sleep(0.25 * attempt)
        if first.get("type") != "session.resumed":
            raise ResumeRefused(json.dumps(first)[:300])
        ms = (time.perf_counter() - t0) * 1000
        self.out.resumes += 1
        self.out.resume_ms.append(ms)
        if self.aborted:
            self.out.resumes_after_abort += 1
        if other:
            self.out.resumes_other += 1
            self.out.resume_ms_other.append(ms)
            for a in self.by_id.values():
                if a.status is None and a.moves:
                    a.moves_other += 1
        self.out.slow.append(
            {"ms": round(ms, 1), "other_replica": other, "session": self.sid, "seq": self.last}
        )
        self.token = first["resume_token"]
        self.expect = self.last + 1
        self.connected.set()
        # Re-send what was not answered, and one that was: it must be dropped.
        again = list(self.unanswered)
        if self.answered_last is not None and self.rng.random() < 0.5:
            again.insert(0, self.answered_last)
        for eid in again:
            self.out.updates_resent += 1
            await self.send(self.marks[eid])

    def _next_cut(self, again: bool = False) -> int | None:
        left = self.quota - self.out.disconnects
        if left <= 0 or self.rng.random() > (0.3 if again else 0.9):
            return None
        return self.rng.randint(1, 40)

    # ------------------------------------------------------------------ run
    async def run(self, deadline: float) -> Outcome:
        try:
            async with aiohttp.ClientSession() as self.http:
                await self._run(deadline)
        except Exception as exc:  # a failed session is reported, not fatal
            where = f"{self.sid} at seq {self.last}, turn {self.out.turns}"
            if self.unanswered:
                where += f", unanswered {self.unanswered}"
            self.out.error = f"{where}: {type(exc).__name__}: {exc}"[:300]
        finally:
            if self.reader is not None:
                self.reader.cancel()
                await asyncio.gather(self.reader, return_exceptions=True)
            self.http = None
        return self.out

    async def _run(self, deadline: float) -> None:
        self.ws = await self._connect(self.rng.randrange(len(self.bases)), f"model={self.kind}")
        first = await self.recv()
        if first.get("type") != "session.created" or "resume_token" not in first:
            raise RuntimeError(f"unexpected first event {json.dumps(first)[:200]}")
        self.sid, self.token = first["session"]["id"], first["resume_token"]
        self.connected.set()
        self.reader = asyncio.create_task(self._read())
        max_turns = self.quota + 3
        while self.out.turns < max_turns and time.monotonic() < deadline:
            if self.out.disconnects >= self.quota and self.out.turns >= 1:
                break
            await self._turn()
        await self.wait_until(lambda: not self.unanswered)
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})
        self.finishing = True
        assert self.ws is not None
        await self.ws.close()

    async def _mark(self) -> None:
        """A ``session.update`` whose ``session.updated`` must come exactly once."""
        self.out.turns += 1
        eid = f"evt_{self.idx}_{self.out.turns}"
        # The mark is a setting every upstream kind keeps (a turn-based one takes no
        # instructions): the turn detection's silence duration, one value per turn. (Not
        # the prefix padding: that moves where the turn, and so the answer's audio, starts.)
        value = MARK_SILENCE_MS + self.out.turns
        self.mark_of[value] = eid
        detection = {"type": "server_vad", "silence_duration_ms": value}
        self.marks[eid] = {
            "type": "session.update",
            "event_id": eid,
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": detection}}},
        }
        self.unanswered.append(eid)
        self.out.updates_sent += 1
        await self.send(self.marks[eid])

    async def _turn(self) -> None:
        await self._mark()
        target = self.done_seen + 1
        # The first answer never moves: the one the moved answers' audio is compared with.
        self.in_response, self.cut = 0, self._next_cut() if self.out.turns > 1 else None
        step = RATE * 2 * CHUNK_MS // 1000
        grid = RATE * TURN_GRID_MS // 1000
        samples = -(-(len(self.clip) // 2 + RATE * 900 // 1000) // grid) * grid
        pcm = self.clip + b"\0\0" * (samples - len(self.clip) // 2)
        t0 = time.monotonic()
        for n, i in enumerate(range(0, len(pcm), step)):
            chunk = pybase64.b64encode(pcm[i : i + step]).decode()
            await self.send({"type": "input_audio_buffer.append", "audio": chunk})
            if self.pace > 0:  # a microphone: real time (pace 1) or faster
                await asyncio.sleep(
                    max(0.0, t0 + (n + 1) * CHUNK_MS / 1000 / self.pace - time.monotonic())
                )
        await self.wait_until(lambda: self.done_seen >= target)
        self.cut = None
        # Let the replay logs shrink, as a well-behaved client does.
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})
