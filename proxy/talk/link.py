"""A ``talk`` conversation's connection: the socket, and the session's resume on a new
one when it drops (``--drop-at``, or closed unasked) or a resume is refused in a way
worth trying again (``proxy/talk/resume_tokens.py``; docs/protocol.md, "Resume").
What the server says is read by ``on_event`` (``proxy/talk/session.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import aiohttp
import orjson

from proxy.talk.options import TalkOptions
from proxy.talk.resume_tokens import ResumeTokens
from proxy.talk.timeline import Resume, Summary, Timeline
from proxy.talk.wire import FORMATS, resume_event, with_model

RECONNECT_PAUSE_S = 0.3  # before resuming after the socket closed unasked
RECONNECTS = 4  # connections tried in a row before the session is given up


class TalkLink:
    def __init__(self, opts: TalkOptions, http: aiohttp.ClientSession) -> None:
        self.opts, self.http = opts, http
        self.loop = asyncio.get_running_loop()
        self.t0 = self.loop.time()
        self.timeline = Timeline(self.t0)
        self.summary = Summary()
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.ready = self.closing = self.dropped = self.gave_up = False
        self.resuming = False  # a resume sent on this connection, not answered yet
        self.session_id: str | None = None
        self.tokens = ResumeTokens()
        self.drop_started: float | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def on_event(self, ev: dict[str, Any]) -> None:
        raise NotImplementedError

    def line(self, kind: str, detail: str = "") -> None:
        self.timeline.line(self.loop.time(), kind, detail)

    async def send(self, event: dict[str, Any]) -> None:
        if self.ws is not None and not self.ws.closed:
            with contextlib.suppress(ConnectionError):
                await self.ws.send_str(orjson.dumps(event).decode())

    async def connect(self, resume: bool) -> None:
        ws = await self.http.ws_connect(with_model(self.opts.url, self.opts.model), max_msg_size=0)
        self.ws, self.ready, self.resuming = ws, False, resume
        if not resume:
            await self.send(FORMATS)
        else:
            await self.send(resume_event(self.session_id, self.tokens.token, self.summary.last_seq))
            self.summary.resumes.append(Resume(after_seq=self.summary.last_seq))
            self.line("session.resume", f"after seq {self.summary.last_seq}")
        self._spawn(self.receive(ws))

    def _spawn(self, coro: Any) -> None:
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def receive(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT and ws is self.ws:
                await self.on_event(orjson.loads(msg.data))
        if ws is self.ws and not self.closing:
            self.ready = False
            self.line("socket.closed", f"code {ws.close_code}")
            if self.session_id is not None:
                self.drop_started = self.loop.time()
                await self.reconnect(RECONNECT_PAUSE_S)

    async def reconnect(self, pause_s: float) -> None:
        """Resume on a new connection after ``pause_s``; one that cannot be made (a replica
        restarting) is tried again, the pause doubling, up to ``RECONNECTS`` times."""
        error: Exception | None = None
        for attempt in range(RECONNECTS):
            await asyncio.sleep(pause_s * 2**attempt)
            try:
                await self.connect(resume=True)
                return
            except (OSError, aiohttp.ClientError) as exc:
                error = exc
        self.give_up("connection_lost", f"cannot reconnect: {error}")

    async def drop(self) -> None:
        """Drop the connection (as a network would) and resume on a new one."""
        self.dropped = True
        self.line("drop", f"closing the socket after seq {self.summary.last_seq}")
        old, self.ws, self.ready = self.ws, None, False
        self.drop_started = self.loop.time()
        if old is not None:
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(old.close(code=4000, message=b"dropped"), 2.0)
        await self.connect(resume=True)

    def resume_refused(self, code: str, token: object) -> None:
        """A resume refused with ``code``: tried again on a new connection (given a model,
        the proxy would carry on this one with a new session), or the session is gone."""
        if not self.tokens.refused(code, token):
            self.give_up(None, "the session cannot be resumed")
            return
        old, self.ws, self.ready = self.ws, None, False
        self._spawn(self.resume_again(old))

    async def resume_again(self, old: aiohttp.ClientWebSocketResponse | None) -> None:
        if old is not None:
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(old.close(), 2.0)
        await self.reconnect(self.tokens.backoff_s())

    def give_up(self, code: str | None, why: str) -> None:
        """End the talk: the session is gone (the error, if new, goes in the summary)."""
        self.session_id, self.gave_up = None, True
        if code is not None:
            self.summary.errors.append({"code": code, "message": why})
        self.line("end", why)
