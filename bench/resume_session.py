"""One resume-bench client session: it speaks, drops its connection (a clean WebSocket
close, or the TCP connection aborted with no close frame), resumes on a random replica,
and checks every server event it gets (``bench/resume.py``)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import aiohttp
import pybase64
from processes import resume_event
from resume_records import Outcome
from resume_wire import RECV_TIMEOUT_S, SessionWire

CHUNK_MS = 100
RATE = 24000
MARK_SILENCE_MS = 500  # + the turn: each turn's mark (see ``_mark``)
# Each turn's audio is a whole number of these (100 ms chunks, 32 ms VAD windows at
# 16 kHz): every turn's clip starts at the same phase of the proxy's VAD and resampler.
TURN_GRID_MS = 800


# ---------------------------------------------------------------------- one session

RESUME_TRIES = 5
# Worth another try (docs/protocol.md, "Resume": the session stays where it was).
RETRY = {"session_resume_unavailable", "upstream_unavailable", "server_shutting_down"}


class ResumeRefused(Exception):
    pass


class Session(SessionWire):
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
        rng = random.Random(seed * 1_000_003 + idx)
        super().__init__(kind, bases, clip[0], rng, abort_share)
        self.idx = idx
        self.pace = pace
        self.clip_name, self.clip = clip
        self.quota = quota
        self.dropping: asyncio.Task[None] | None = None  # a drop the turn task began
        self.changed = asyncio.Event()  # the reader took an event (or ended)
        self.reader: asyncio.Task[None] | None = None
        self.sid = ""
        self.token = ""
        self.marks: dict[str, dict[str, Any]] = {}  # event_id -> the session.update
        self.cut: int | None = None  # drop the connection after this many response events
        self.in_response = 0
        self.finishing = False

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
