"""An emulated session's upstream socket: read onto the session queue, written to,
and replaced when it is lost or aborted (a fresh upstream session, or the
upstream's own session resumed on a new socket)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from proxy.clock import now_ms
from proxy.config import Route
from proxy.emulated.client_side import ClientSide
from proxy.emulated.queue_items import FromUpstream, Stop
from proxy.json_depth import nests_deeper_than
from proxy.logging import Logger
from proxy.state import ProxyState
from proxy.upstream import (
    UpstreamRefused,
    UpstreamUnavailable,
    close_within,
    opening_update,
    redial_turn,
    resume_upstream,
    send_within,
)
from proxy.upstream_fresh import dial_fresh
from shim.actions import AbortUpstream, ResumeUpstream
from shim.capabilities import Classification
from shim.inputs import Input, UpstreamEvent, UpstreamLost, UpstreamReattached


class UpstreamControl:
    def __init__(
        self,
        state: ProxyState,
        route: Route,
        cls: Classification,
        upstream_model: str,
        url: str,
        ws: aiohttp.ClientWebSocketResponse,
        inputs: asyncio.Queue[object],
        out: ClientSide,
        handle: Callable[[Input], Awaitable[None]],
        log: Logger,
    ) -> None:
        self.state = state
        self.route = route
        self.cls = cls
        self.upstream_model = upstream_model
        self.url = url
        self.ws = ws
        self.inputs = inputs
        self.out = out
        # Hands the shim an input now, inside the input being handled.
        self.handle = handle
        self.log = log
        # The session is stopping: a socket that closes now is no loss.
        self.closing = False
        self._task: asyncio.Task[None] | None = None
        # A socket given up on (it took no frame in time): nothing more is sent to it.
        self._given_up: aiohttp.ClientWebSocketResponse | None = None
        self._closers: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._feed(self.ws), name="feed-upstream")

    async def send(self, text: str) -> None:
        ws = self.ws
        if ws is self._given_up:
            return
        within = self.state.config.server.upstream_send_timeout_s
        try:
            await send_within(ws, text, within)
        except TimeoutError:
            self._give_up(ws, f"upstream took no frame for {within:g} s")
        except (ConnectionResetError, RuntimeError, aiohttp.ClientError):
            pass

    def _give_up(self, ws: aiohttp.ClientWebSocketResponse, why: str) -> None:
        """The upstream stopped reading: it is lost, as if its socket had dropped."""
        self._given_up = ws
        if self._task is not None:
            self._task.cancel()
        closer = asyncio.get_running_loop().create_task(close_within(ws))
        self._closers.add(closer)
        closer.add_done_callback(self._closers.discard)
        self.state.metrics.upstream_errors.labels("timeout").inc()
        self.log.warning("upstream_lost", reason=why)
        self.inputs.put_nowait(UpstreamLost(why, now_ms()))

    async def close(self, end_session: bool = False) -> None:
        """The session stops: stop reading, close the socket. ``end_session``: it ends
        for good, so end the duplex upstream session too (left in its disconnect grace,
        it would hold one of the upstream's slots: docs/fidelity.md, row 8)."""
        self.closing = True
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        if end_session and self.cls.kind == "duplex" and self.ws is not self._given_up:
            quiet = (TimeoutError, ConnectionResetError, RuntimeError, aiohttp.ClientError)
            with contextlib.suppress(*quiet):
                await send_within(self.ws, '{"type": "session.close"}', 1.0)
        await close_within(self.ws)

    async def drop(self) -> None:
        """Stop reading the socket and close it (before a redial)."""
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await close_within(self.ws)

    async def redial(self, action: AbortUpstream) -> None:
        """Drop the upstream socket and open a fresh upstream session: the turn
        dialect's only abort, and the way on when an upstream session is lost."""
        await self.drop()
        if not action.redial:
            return
        try:
            created = await self.open_fresh()
        except (UpstreamUnavailable, UpstreamRefused) as exc:
            self.state.metrics.upstream_errors.labels("connect").inc()
            detail = exc.detail if isinstance(exc, UpstreamUnavailable) else None
            self.log.warning("upstream_redial_failed", error=str(exc), detail=detail)
            # The client learns the route; the upstream's address stays in the log.
            self.out.error(
                "upstream_unavailable",
                f"route {self.route.model!r}: the upstream was lost and is not reachable",
            )
            await self.inputs.put(Stop())
            return
        if action.after_loss:
            self.state.metrics.upstream_reattach.labels("fresh").inc()
        await self.handle(UpstreamReattached(created, now_ms()))

    async def reattach(self, action: ResumeUpstream) -> None:
        """The upstream socket dropped: resume the upstream's own session on a new one;
        if it cannot, the shim hears so and falls back to a fresh upstream session."""
        try:
            created = await self.resume(action)
        except (UpstreamUnavailable, UpstreamRefused) as exc:
            self.log.warning("upstream_resume_failed", error=str(exc)[:200], effect="fresh session")
            lost = UpstreamLost("the upstream could not resume its session", now_ms(), False)
            await self.handle(lost)
            return
        await self.handle(UpstreamReattached(created, now_ms()))

    async def open_fresh(self) -> dict[str, Any]:
        """A new upstream session on a new socket; its ``session.created``.

        Raises UpstreamUnavailable or UpstreamRefused."""
        http, cfg = self.state.http, self.state.config.server
        assert http is not None
        created: dict[str, Any] = {}
        if self.cls.kind == "turn":
            self.ws = await redial_turn(
                http,
                self.url,
                self.route,
                cfg.upstream_connect_timeout_s,
                cfg.classify_timeout_s,
                heartbeat_s=cfg.upstream_heartbeat_s,
            )
        else:
            # Its lost session may hold the upstream's slot for its grace: proxy/upstream_fresh.py.
            link = await dial_fresh(
                http,
                self.state.upstream_url(self.route),
                self.route,
                opening_update(self.route, self.upstream_model, None),
                cfg.upstream_connect_timeout_s,
                cfg.classify_timeout_s,
                heartbeat_s=cfg.upstream_heartbeat_s,
            )
            self.ws, created = link.ws, link.created
        self.start()
        return created

    async def resume(self, action: ResumeUpstream) -> dict[str, Any]:
        """The upstream's own session on a new socket; its ``session.resumed``.

        The upstream replays what the proxy had not handled. Raises
        UpstreamUnavailable or UpstreamRefused (restarted, expired, journal gone)."""
        http, cfg = self.state.http, self.state.config.server
        assert http is not None
        link = await resume_upstream(
            http,
            self.state.upstream_url(self.route),
            self.route,
            self.upstream_model,
            action.session_id,
            action.resume_token,
            action.after_seq,
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
            heartbeat_s=cfg.upstream_heartbeat_s,
        )
        self.ws = link.ws
        self.start()
        self.state.metrics.upstream_reattach.labels("resumed").inc()
        self.log.info("upstream_resumed", after_seq=action.after_seq)
        return link.created

    async def _feed(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                event = orjson.loads(msg.data)
            except orjson.JSONDecodeError:
                self.state.metrics.upstream_errors.labels("protocol").inc()
                continue
            if nests_deeper_than(msg.data, event, self.state.config.server.max_json_depth):
                # It could not be stamped for the client: drop it, the session goes on.
                self.state.metrics.upstream_errors.labels("protocol").inc()
                self.log.warning("upstream_event_dropped", reason="nested too deeply")
                continue
            if isinstance(event, dict):
                await self.inputs.put(FromUpstream(ws, UpstreamEvent(event, msg.data, now_ms())))
        if not self.closing:
            self.state.metrics.upstream_errors.labels("closed").inc()
            self.log.warning("upstream_lost", close_code=ws.close_code)
            await self.inputs.put(UpstreamLost(f"upstream closed ({ws.close_code})", now_ms()))
