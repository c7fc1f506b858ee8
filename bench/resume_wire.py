"""A resume-bench session's wire: it connects to a replica, sends, and checks every
server event it receives (exactly once and in order by ``server_event_seq``, the same
event never under two seqs), keeping each answer's audio and end and which marks
(``session.update``) were applied (``bench/resume_session.py`` builds on it)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import random
import socket
import struct
import time
from typing import Any

import aiohttp
import pybase64
from resume_records import Answer, Outcome

RECV_TIMEOUT_S = 20.0


def _mark_value(ev: dict[str, Any]) -> int | None:
    """The turn detection's silence duration a ``session.updated`` reports."""
    session = ev.get("session") or {}
    detection = ((session.get("audio") or {}).get("input") or {}).get("turn_detection") or {}
    value = detection.get("silence_duration_ms") if isinstance(detection, dict) else None
    return value if isinstance(value, int) else None


class SessionWire:
    """One client session's connection to the replicas and its checks of what comes."""

    def __init__(
        self, kind: str, bases: list[str], clip_name: str, rng: random.Random, abort_share: float
    ) -> None:
        self.kind = kind
        self.bases = bases
        self.rng = rng
        self.abort_share = abort_share  # drops that abort the TCP connection
        self.out = Outcome(kind, clip=clip_name)
        self.by_id: dict[str, Answer] = {}  # response id -> its answer
        self.by_item: dict[str, Answer] = {}  # output item id -> its answer
        self.trace: list[str] = []  # seq and type of each event, and each drop
        self.audio_at = 0.0  # when the last audio delta came
        self.http: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.connected = asyncio.Event()  # clear while the reader reconnects
        self.replica = 0
        self.last = 0  # highest seq received
        self.expect = 1  # next seq this connection must deliver
        self.seen: dict[int, tuple[str, str]] = {}  # seq -> (event_id, text digest)
        self.ids: set[str] = set()
        self.mark_of: dict[int | None, str] = {}  # silence duration -> the mark's event_id
        self.unanswered: list[str] = []  # mark event ids with no session.updated seen
        self.answered_last: str | None = None
        self.done_seen = 0
        self.aborted = False  # the last drop was an abort

    async def _connect(self, replica: int, query: str) -> aiohttp.ClientWebSocketResponse:
        assert self.http is not None
        self.replica = replica
        return await self.http.ws_connect(f"{self.bases[replica]}?{query}", max_msg_size=0)

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
