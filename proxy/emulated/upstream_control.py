"""An emulated session's upstream socket: read onto the session queue, written to,
and replaced when it is lost or aborted (a fresh upstream session, or the
upstream's own session resumed on a new socket).

A replacement is dialled off the session loop (``proxy/emulated/upstream_redial.py``):
the session goes on answering its client meanwhile, what it sends upstream waits in
an outbox, and the new socket is attached in order, on the loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import aiohttp

from proxy.client_queue import FrameCredits
from proxy.clock import now_ms
from proxy.config import Route
from proxy.emulated.client_side import ClientSide
from proxy.emulated.queue_items import FromUpstream, Stop
from proxy.emulated.upstream_dial import Socket, open_fresh, resume_own
from proxy.emulated.upstream_frames import upstream_input
from proxy.emulated.upstream_redial import InLoop, Outbox, report_in, retrying
from proxy.logging import Logger
from proxy.state import ProxyState
from proxy.upstream import UpstreamRefused, UpstreamUnavailable, close_within, send_within
from shim.actions import AbortUpstream, ResumeUpstream
from shim.capabilities import Classification
from shim.inputs import Input, UpstreamLost, UpstreamReattached


class UpstreamControl:
    def __init__(
        self,
        state: ProxyState,
        route: Route,
        cls: Classification,
        upstream_model: str,
        url: str,
        ws: Socket,
        inputs: asyncio.Queue[object],
        out: ClientSide,
        handle: Callable[[Input], Awaitable[None]],
        log: Logger,
    ) -> None:
        self.state, self.route, self.cls = state, route, cls
        self.upstream_model, self.url, self.ws = upstream_model, url, ws
        self.inputs, self.out = inputs, out
        self.room = FrameCredits(state.config.server.upstream_queue_bytes)
        # Hands the shim an input now, inside the input being handled.
        self.handle = handle
        self.log = log
        # The session is stopping: a socket that closes now is no loss.
        self.closing = False
        self._task: asyncio.Task[None] | None = None
        # A socket given up on (it took no frame in time): nothing more is sent to it.
        self._given_up: Socket | None = None
        self._closers: set[asyncio.Task[None]] = set()
        # While a replacement is dialled: what is sent upstream waits here.
        self.outbox: Outbox | None = None
        self._dialing: asyncio.Task[None] | None = None
        self._dialing_fresh = False
        # Each replacement asked for; an outcome of an older one is stale.
        self._generation = 0
        # Sockets dialled but not yet attached by the loop (closed if the session ends).
        self._arrived: set[Socket] = set()
        # Held for an upstream session that could not be resumed: they go to the fresh
        # one, after what the shim sends it first (see ``settle``).
        self._carried: list[str] = []

    def start(self) -> None:
        self._task = asyncio.create_task(self._feed(self.ws), name="feed-upstream")

    async def send(self, text: str) -> None:
        if self.outbox is not None:
            if not self.outbox.hold(text) and not self.outbox.told:
                self.outbox.told = True
                self.out.error(
                    "upstream_reconnecting",
                    f"route {self.route.model!r}: the upstream is being reached again;"
                    " what does not fit meanwhile is dropped",
                )
            return
        ws = self.ws
        if ws is self._given_up:
            return
        within = self.state.config.server.upstream_send_timeout_s
        try:
            await send_within(ws, text, within)
        except TimeoutError:
            self._give_up(ws, f"upstream took no frame for {within:g} s")
        except (ConnectionError, RuntimeError, aiohttp.ClientError):
            pass

    def _give_up(self, ws: Socket, why: str) -> None:
        """The upstream stopped reading: it is lost, as if its socket had dropped."""
        self._given_up = ws
        if self._task is not None:
            self._task.cancel()
        self._close_later(ws)
        self.state.metrics.upstream_errors.labels("timeout").inc()
        self.log.warning("upstream_lost", reason=why)
        self._lost(ws, why)

    def _close_later(self, ws: Socket) -> None:
        closer = asyncio.get_running_loop().create_task(close_within(ws))
        self._closers.add(closer)
        closer.add_done_callback(self._closers.discard)

    def _lost(self, ws: Socket, why: str) -> None:
        """Tell the shim, on the loop, unless that socket was replaced meanwhile."""

        async def tell() -> None:
            if ws is self.ws and self.outbox is None and not self.closing:
                await self.handle(UpstreamLost(why, now_ms()))

        self.inputs.put_nowait(InLoop(tell))

    async def close(self, end_session: bool = False) -> None:
        """The session stops: stop reading, close the socket. ``end_session``: it ends
        for good, so end the duplex upstream session too (left in its disconnect grace,
        it would hold one of the upstream's slots: docs/fidelity.md, row 8)."""
        self.closing = True
        if self._dialing is not None:
            self._dialing.cancel()
        for ws in list(self._arrived):
            self._close_later(ws)
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        if end_session and self.cls.kind == "duplex" and self.ws is not self._given_up:
            quiet = (TimeoutError, ConnectionError, RuntimeError, aiohttp.ClientError)
            with contextlib.suppress(*quiet):
                await send_within(self.ws, '{"type": "session.close"}', 1.0)
        await close_within(self.ws)

    def _drop(self) -> None:
        """Stop reading the socket; it closes in the background (before a redial)."""
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        self._close_later(self.ws)

    async def redial(self, action: AbortUpstream) -> None:
        """Drop the upstream socket and open a fresh upstream session: the turn
        dialect's only abort, and the way on when an upstream session is lost.

        Returns at once: the dial runs as its own task. What was held for the socket
        dropped belonged to its session, so it goes."""
        self._drop()
        if not action.redial:
            self._cancel_dialing()
            self.outbox = None
            return
        if action.after_loss and self.outbox is not None:
            # The upstream's own session could not be resumed: what the client said
            # meanwhile is the client's, for the fresh session (not a playback report
            # of the lost one's items: the shim sends the client's acks again itself).
            self._carried = [t for t in self.outbox.take() if report_in(t) is None]
        self.outbox = Outbox(self.state.config.redial.buffer_bytes)
        if self._dialing is not None and self._dialing_fresh and not self._dialing.done():
            return  # a fresh upstream session is on its way already
        self._cancel_dialing()
        self._generation += 1
        label = "fresh" if action.after_loss else None
        dial = partial(open_fresh, self.state, self.route, self.cls, self.upstream_model)
        self._begin(lambda: dial(self.url, action.opening), label, fresh=True)

    async def reattach(self, action: ResumeUpstream) -> None:
        """The upstream socket dropped: resume the upstream's own session on a new one;
        if it cannot, the shim hears so and falls back to a fresh upstream session."""
        self._drop()
        self._cancel_dialing()
        self.outbox = Outbox.replacing(self.outbox, self.state.config.redial.buffer_bytes)
        self._generation += 1
        self._begin(lambda: self._resumed(action), "resumed", fresh=False)

    def settle(self) -> None:
        """The actions of one input are done: frames carried over from a failed resume
        go after what the shim sent a fresh session first (the client's settings back)."""
        if self._carried and self.outbox is not None:
            for text in self._carried:
                self.outbox.hold(text)
        self._carried = []

    @property
    def redialing(self) -> bool:
        """No upstream socket takes frames now: a replacement is being dialled."""
        return self.outbox is not None

    def _cancel_dialing(self) -> None:
        if self._dialing is not None:
            self._dialing.cancel()
        self._dialing = None

    def _begin(
        self,
        attempt: Callable[[], Awaitable[tuple[Socket, dict[str, Any]]]],
        label: str | None,
        *,
        fresh: bool,
    ) -> None:
        gen = self._generation
        self._dialing_fresh = fresh
        self._dialing = asyncio.create_task(self._dial(gen, attempt, label, fresh), name="redial")

    async def _dial(
        self,
        gen: int,
        attempt: Callable[[], Awaitable[tuple[Socket, dict[str, Any]]]],
        label: str | None,
        fresh: bool,
    ) -> None:
        def failed(tried: int, exc: UpstreamUnavailable) -> None:
            self.state.metrics.upstream_errors.labels("connect").inc()
            self.log.info("upstream_redial_retry", attempt=tried, error=str(exc)[:200])

        try:
            ws, created = await retrying(attempt, self.state.config.redial, failed)
        except Exception as exc:  # not reached, refused, or the proxy's client closed: never stuck
            self.inputs.put_nowait(InLoop(partial(self._not_reached, gen, exc, fresh)))
            return
        if self.closing:
            self._close_later(ws)
            return
        self._arrived.add(ws)
        self.inputs.put_nowait(InLoop(partial(self._attach, gen, ws, created, label)))

    async def _attach(
        self, gen: int, ws: Socket, created: dict[str, Any], label: str | None
    ) -> None:
        """On the loop: the new socket replaces the old one, the shim hears of it
        first, then what waited for it goes out in order."""
        self._arrived.discard(ws)
        if gen != self._generation or self.closing:
            self._close_later(ws)
            return
        self.ws, held = ws, self.outbox
        self.outbox, self._dialing = None, None
        self.start()
        if label is not None:
            self.state.metrics.upstream_reattach.labels(label).inc()
        unsent = tuple(held.unsent) if held is not None else ()  # no answer to come
        await self.handle(UpstreamReattached(created, now_ms(), unsent))
        if held is not None and self.outbox is None and gen == self._generation:
            for text in held.take():
                await self.send(text)

    async def _not_reached(self, gen: int, exc: Exception, fresh: bool) -> None:
        if gen != self._generation or self.closing:
            return
        self._dialing = None
        if not fresh:
            self.log.warning("upstream_resume_failed", error=str(exc)[:200], effect="fresh session")
            lost = UpstreamLost("the upstream could not resume its session", now_ms(), False)
            await self.handle(lost)
            return
        if isinstance(exc, UpstreamRefused):  # an unreachable try was counted as it failed
            self.state.metrics.upstream_errors.labels("connect").inc()
        detail = exc.detail if isinstance(exc, UpstreamUnavailable) else None
        self.log.warning("upstream_redial_failed", error=str(exc), detail=detail)
        # The client learns the route; the upstream's address stays in the log.
        self.out.error(
            "upstream_unavailable",
            f"route {self.route.model!r}: the upstream was lost and is not reachable",
        )
        await self.inputs.put(Stop())

    async def _resumed(self, action: ResumeUpstream) -> tuple[Socket, dict[str, Any]]:
        ws, resumed = await resume_own(self.state, self.route, self.upstream_model, action)
        self.log.info("upstream_resumed", after_seq=action.after_seq)
        return ws, resumed

    async def _feed(self, ws: Socket) -> None:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            inp = upstream_input(msg.data, self.state, self.log)
            if inp is not None:
                await self.room.acquire(len(inp.raw))  # given back once handled (runner)
                await self.inputs.put(FromUpstream(ws, inp))
        if not self.closing:
            self.state.metrics.upstream_errors.labels("closed").inc()
            self.log.warning("upstream_lost", close_code=ws.close_code)
            self._lost(ws, f"upstream closed ({ws.close_code})")
