"""One soak client: a session for the whole run, turn after turn at real-time pace,
with faults of its own (cuts, floods, slow reading), resumed across every cut and drop
and checked by ``server_event_seq``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
import traceback
from typing import Any

import aiohttp
import pybase64
from processes import resume_event
from soak_counts import Faults, Outcome

RATE = 24000
CHUNK_MS = 40
RECV_TIMEOUT_S = 30.0
TURN_TIMEOUT_S = 20.0  # a turn with no response.done by then is counted stalled


class Client:
    """One client for the whole run: a session, resumed across every cut and drop.

    A reader task takes every event (checking ``server_event_seq``) and is the one that
    reconnects: at a planned cut, or when the proxy dropped the connection.
    """

    def __init__(
        self, idx: int, kind: str, bases: list[str], clip: bytes, rng: random.Random
    ) -> None:
        self.idx, self.kind, self.bases, self.clip, self.rng = idx, kind, bases, clip, rng
        self.out = Outcome(kind)
        self.faults = Faults()
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.connected = asyncio.Event()
        self.changed = asyncio.Event()
        self.sid, self.token = "", ""
        self.last, self.expect = 0, 1
        self.seen: set[int] = set()
        self.done_seen = 0
        self.cut_after: int | None = None  # planned cut after this many response events
        self.in_response = 0
        self.stall_s = 0.0  # the reader stops reading this long, once
        self.finishing = False
        self.last_error = ""  # the last error code received on this connection
        self.reader: asyncio.Task[None] | None = None
        self.t0 = time.monotonic()

    async def _open(self) -> None:
        assert self.http is not None
        base = self.rng.choice(self.bases)
        self.ws = await self.http.ws_connect(f"{base}?model={self.kind}", max_msg_size=0)
        first = await self._recv()
        if first.get("type") != "session.created":
            raise ConnectionError(f"no session.created: {json.dumps(first)[:200]}")
        # No resume_token while the store is down: that session cannot be resumed.
        self.sid, self.token = first["session"]["id"], first.get("resume_token", "")
        self.last, self.expect, self.seen = 0, 1, set()
        self.out.sessions += 1
        self.last_error = ""
        self.connected.set()

    async def _recv(self) -> dict[str, Any]:
        assert self.ws is not None
        msg = await self.ws.receive(timeout=RECV_TIMEOUT_S)
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise ConnectionError(f"socket ended ({msg.type.name}, {self.ws.close_code})")
        ev: dict[str, Any] = json.loads(msg.data)
        if ev.get("type") == "error":
            self.last_error = str((ev.get("error") or {}).get("code"))
        seq = ev.get("server_event_seq")
        if isinstance(seq, int):
            self._check(seq, ev)
        return ev

    def _check(self, seq: int, ev: dict[str, Any]) -> None:
        if seq in self.seen:
            self.out.duplicated += 1
            return
        if seq != self.expect:
            self.out.out_of_order += 1
            if seq > self.expect:
                self.out.lost += seq - self.expect
        self.seen.add(seq)
        self.last = max(self.last, seq)
        self.expect = seq + 1
        self.out.events += 1
        if ev.get("type") == "response.done":
            self.done_seen += 1
            status = str((ev.get("response") or {}).get("status"))
            self.out.responses[status] = self.out.responses.get(status, 0) + 1

    async def send(self, event: dict[str, Any]) -> None:
        if self.reader is not None and self.reader.done():
            self.reader.result()  # raises what ended it
            raise ConnectionError("reader ended")
        # The reader may be resuming (bounded) and then opening anew (bounded).
        await asyncio.wait_for(self.connected.wait(), 3 * RECV_TIMEOUT_S)
        assert self.ws is not None
        with contextlib.suppress(ConnectionError, RuntimeError, aiohttp.ClientError):
            await self.ws.send_str(json.dumps(event))

    async def _resume(self) -> None:
        """A new connection to a random replica, ``session.resume`` first; a new session
        if the old one cannot be resumed (counted as a resume failure)."""
        assert self.http is not None
        self.connected.clear()
        if self.ws is not None:
            await self.ws.close()
        if not self.token:
            self.out.not_resumable += 1
            await self._reopen()
            return
        base = self.rng.choice(self.bases)
        self.ws = await self.http.ws_connect(base, max_msg_size=0)
        await self.ws.send_str(json.dumps(resume_event(self.sid, self.token, self.last)))
        try:
            first = await self._recv()
        except TimeoutError:
            self.out.resume_hangs += 1
            self.out.hang_at.append([round(time.monotonic() - self.t0, 1), base, self.sid])
            first = {"type": f"(no answer to session.resume in {RECV_TIMEOUT_S:.0f} s)"}
        except ConnectionError as exc:
            first = {"type": f"(connection ended: {exc})"}
        if first.get("type") != "session.resumed":
            self.out.resume_failures.append(json.dumps(first)[:200])
            await self.ws.close()
            await self._reopen()
            return
        self.out.resumes += 1
        self.token = first["resume_token"]
        self.expect = self.last + 1
        self.connected.set()

    async def _reopen(self) -> None:
        """A new session; retried while the route's upstream restarts (bounded)."""
        deadline = time.monotonic() + RECV_TIMEOUT_S
        while True:
            try:
                await self._open()
                return
            except (ConnectionError, TimeoutError, aiohttp.ClientError):
                if time.monotonic() > deadline:
                    raise
                self.out.reopen_retries += 1
                await asyncio.sleep(0.5)

    async def _read(self) -> None:
        try:
            while True:
                if self.stall_s:
                    stall, self.stall_s = self.stall_s, 0.0
                    await asyncio.sleep(stall)
                try:
                    ev = await self._recv()
                except (ConnectionError, TimeoutError, aiohttp.ClientError):
                    if self.finishing:
                        return
                    self.faults.dropped_by_proxy += 1
                    code = self.ws.close_code if self.ws is not None else None
                    why = f"close {code} after {self.last_error or 'no error'}"
                    self.out.drops[why] = self.out.drops.get(why, 0) + 1
                    await self._resume()
                    continue
                kind = str(ev.get("type"))
                if kind.startswith("response.") and "server_event_seq" in ev:
                    self.in_response += 1
                    if self.cut_after is not None and self.in_response >= self.cut_after:
                        self.cut_after = None
                        self.faults.client_cuts += 1
                        await self._resume()
                self.changed.set()
        finally:
            self.changed.set()

    async def _turn(self, reader: asyncio.Task[None]) -> None:
        self.out.turns += 1
        target = self.done_seen + 1
        self.in_response = 0
        roll = self.rng.random()
        if roll < 0.25:
            self.cut_after = self.rng.randint(1, 30)
        elif roll < 0.35:
            self.faults.floods += 1
            silence = pybase64.b64encode(b"\0\0" * (RATE // 50)).decode()
            for _ in range(self.rng.randint(200, 600)):
                await self.send({"type": "input_audio_buffer.append", "audio": silence})
        elif roll < 0.45:
            self.faults.slow_readers += 1
            self.stall_s = self.rng.uniform(2.0, 6.0)
        step = RATE * 2 * CHUNK_MS // 1000
        pcm = self.clip + b"\0\0" * (RATE * 900 // 1000)
        t0 = time.monotonic()
        for n, i in enumerate(range(0, len(pcm), step)):
            chunk = pybase64.b64encode(pcm[i : i + step]).decode()
            await self.send({"type": "input_audio_buffer.append", "audio": chunk})
            await asyncio.sleep(max(0.0, t0 + (n + 1) * CHUNK_MS / 1000 - time.monotonic()))
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                while self.done_seen < target:
                    if reader.done():
                        reader.result()
                        raise ConnectionError("reader ended")
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            self.out.stalled_turns += 1
        self.cut_after = None
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})

    async def run(self, deadline: float) -> Outcome:
        reader: asyncio.Task[None] | None = None
        try:
            async with aiohttp.ClientSession() as self.http:
                await self._reopen()
                reader = self.reader = asyncio.create_task(self._read())
                while time.monotonic() < deadline:
                    await self._turn(reader)
                self.finishing = True
                if self.ws is not None:
                    await self.ws.close()
        except Exception as exc:  # a failed client is reported, not fatal
            where = " <- ".join(
                f"{f.name}:{f.lineno}" for f in reversed(traceback.extract_tb(exc.__traceback__))
            )
            self.out.error = (
                f"{self.sid} at seq {self.last}: {type(exc).__name__}: {exc} ({where})"[:400]
            )
        finally:
            if reader is not None:
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
        return self.out
