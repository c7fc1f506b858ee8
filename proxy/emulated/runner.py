"""``EmulatedRunner``: one emulated session's queue, loop and lifecycle (the model:
``proxy.emulated``). It handles each queue item in order, executes the shim's actions,
and keeps the session for ``disconnect_grace_s`` after its client leaves
(``departures.py``)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import aiohttp

from proxy.client_frames import ClientFrame
from proxy.client_queue import FrameCredits
from proxy.clock import now_ms
from proxy.config import Route
from proxy.emulated.actions_run import ActionRunner
from proxy.emulated.attachments import Attachments
from proxy.emulated.client_side import ClientSide
from proxy.emulated.departures import close_by_client, on_detach, parked
from proxy.emulated.feeders import VadFeed, feed_attachment
from proxy.emulated.held_ends import HeldEnds
from proxy.emulated.persisted import PersistedSession
from proxy.emulated.queue_items import Attach, Detached, Execute, FromClient, FromUpstream
from proxy.emulated.session_controls import answer_control
from proxy.emulated.session_loop import InputLoop
from proxy.emulated.shim_setup import created_event, new_shim
from proxy.emulated.ticker import Ticker
from proxy.emulated.upstream_control import UpstreamControl
from proxy.emulated.upstream_redial import InLoop
from proxy.logging import Logger
from proxy.persist.persister import Persister
from proxy.state import ProxyState
from shim.actions import Action
from shim.capabilities import Classification
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import ClientEvent, ClientPresence, Input, Tick
from shim.journal import Journal, RecentIds
from shim.session import EmulatedSession


def live_runner(state: ProxyState, session_id: str) -> EmulatedRunner | None:
    """The emulated session alive on this replica under ``session_id``, if any."""
    runner = state.live.get(session_id)
    return runner if isinstance(runner, EmulatedRunner) else None


class EmulatedRunner(PersistedSession):
    """One emulated session, from open to the end of its disconnect grace."""

    def __init__(
        self,
        state: ProxyState,
        session_id: str,
        route: Route,
        cls: Classification,
        model: str,
        upstream_model: str,
        upstream: aiohttp.ClientWebSocketResponse,
        upstream_url: str,
        upstream_created: dict[str, Any],
        log: Logger,
        start_seq: int = 0,
    ) -> None:
        self.state, self.session_id, self.route, self.cls = state, session_id, route, cls
        self.model, self.upstream_model = model, upstream_model
        self.upstream_url, self.upstream_created = upstream_url, upstream_created
        self.log = log
        store_cfg, srv = state.config.store, state.config.server
        self.journal = Journal(
            session_id[-8:],
            store_cfg.replay_max_bytes,
            store_cfg.replay_max_age_s * 1000,
            start_seq,
        )
        self.recent = RecentIds(store_cfg.recent_event_ids)
        self.shim: EmulatedSession = new_shim(state, session_id, cls, model, upstream_model, route)
        # Unbounded for the session's own producers (the upstream, the VAD, ticks), which a
        # full queue would deadlock against the loop; client frames on it are bounded by
        # ``credits``: past them the client is no longer read (its inbox, then socket, push back).
        self.inputs: asyncio.Queue[object] = asyncio.Queue()
        self.credits = FrameCredits(srv.pending_client_bytes, srv.session_queue_frames)
        self.vad = VadFeed(state.vad_runner(), self.inputs)
        keep_ms = self.shim.settings.max_hold_ms + 1000
        self.loop = InputLoop(self.inputs, self._step, self._failed)
        shim = self.shim
        self.ticker = Ticker(self.inputs, keep_ms, shim.wants_ticks, self.loop.offer, shim.due_at)
        # The session's end (server.max_session_s), across every attachment.
        self.ends_at = asyncio.get_running_loop().time() + state.config.server.max_session_s
        self.out = ClientSide(session_id, self.journal, state.metrics, cls.mode, not cls.ga_client)
        self.upstream = UpstreamControl(
            state,
            route,
            cls,
            upstream_model,
            upstream_url,
            upstream,
            self.inputs,
            self.out,
            self.handle,
            log,
        )
        self._tasks: list[asyncio.Task[None]] = []
        self.finished = asyncio.Event()
        self.persister = Persister(self, state)
        self.out.held = HeldEnds(self.persister, state.metrics, cls.mode)
        self.attachments = Attachments()  # handed over, served or not yet
        self.close_reason: str | None = None
        # When its client hung up (``departures.py``); None while attached, or dropped.
        self.parked_at: float | None = None
        self.actions = ActionRunner(
            session_id,
            self.out,
            self.upstream,
            self.vad.analyze,
            self.inputs,
            self.persister,
            state.metrics,
            log,
        )

    # ------------------------------------------------------------------ lifecycle
    def slot(self) -> str | None:
        """The session holds its route's slot until it ends, in its grace too."""
        return self.route.model

    def yields_slot(self) -> bool:
        return parked(self)

    def bind_upstream(self, created: dict[str, Any]) -> None:
        """The upstream session the shim relays (its id and resume token, if it has them)."""
        if isinstance(self.shim, BargeInRelaySession):
            self.shim.bind_upstream(created)

    def start(self) -> None:
        self.state.live[self.session_id] = self
        self._active().inc()  # opened here or resumed here: the session lives on this replica
        self._tasks = [
            asyncio.create_task(self._loop(), name="session-loop"),
            asyncio.create_task(self.ticker.run(), name="tick"),
            asyncio.create_task(self.persister.run(), name="persist"),
        ]
        self.upstream.start()

    async def attach(
        self,
        attach: Attach,
        pending: list[ClientFrame] | None = None,
        after: list[Action] | None = None,
    ) -> None:
        """Hand the session a client connection; returns when that attachment ends
        (see ``feed_attachment``), or at once if the session is ending."""
        self.recent.new_connection()  # its re-sends of earlier events are dropped once
        feed = (self.inputs, self.credits, self.loop.offer, attach, pending or [], after or [])
        await self.attachments.run(attach, lambda: feed_attachment(*feed))

    def created_event(self, resume_token: str | None, resumed: bool = False) -> dict[str, Any]:
        return created_event(
            self.state,
            self.session_id,
            self.model,
            self.cls,
            self.shim,
            self.upstream_created,
            resume_token,
            resumed,
        )

    async def stop(self, code: int = 1000, reason: str = "session ended") -> None:
        if self.attachments.end is not None:
            return
        self.attachments.ending(code, reason)  # no attachment is served from here
        self.upstream.closing = True
        try:
            await self._wind_down(code, reason)
        finally:  # whatever failed on the way, the session leaves: its slot, its count
            if self.state.live.get(self.session_id) is self:
                del self.state.live[self.session_id]
                self._active().dec()
            self.finished.set()

    async def _wind_down(self, code: int, reason: str) -> None:
        # What it is owed goes as it closes (HeldEnds.settle: waits for the store if drained).
        if (attached := self.out.attached) is not None:
            await attached.client.close(code, reason)
            attached.done.set()
        await self.attachments.close_unserved(attached)  # queued, or in the loop's hand
        self.out.release(unsaved=code != 1012)  # (a Detached may have run meanwhile)
        try:  # 1012 (drain) means "resume elsewhere": keep it; any other end is final.
            await self.persister.finish(final=code != 1012)
        except Exception:  # the store's fault is logged; the upstream is let go all the same
            self.log.exception("session_final_persist_failed")
        for task in [*self._tasks, self.loop.inline]:
            if task is not None and task is not asyncio.current_task():
                task.cancel()  # (a frame being handled by its reader, too)
        self.ticker.cancel()
        self.vad.close()
        # Drained or replaced, the upstream session goes on elsewhere only if its token is
        # stored; else it would hold the slot the new owner needs (upstream_fresh.py).
        moving = code == 1012 or reason == "session_replaced"
        await self.upstream.close(end_session=not (moving and self.persister.upstream_handed_on()))

    def _active(self) -> Any:
        route = self.route
        labels = (self.cls.mode, route.model, route.upstream_model or route.model)
        return self.state.metrics.sessions_active.labels(*labels)

    async def replaced_elsewhere(self) -> None:
        """Another replica resumed this session: tell the client here and let go."""
        self.out.tell_replaced()
        await self.stop(1000, "session_replaced")

    async def drain(self) -> None:
        """Shutdown: persist everything, then close with 1012 so the client resumes elsewhere."""
        await self.persister.flush()
        await self.stop(1012, "service restart")

    # ------------------------------------------------------------------ the loop
    async def _loop(self) -> None:
        await self.loop.run()
        if self.actions.standing_down:
            await self.replaced_elsewhere()
        if self.close_reason is not None:
            await self.stop(1000, self.close_reason)
        await self.stop(1011, "session ended")

    def _failed(self) -> None:
        self.log.exception("session_loop_failed")
        self.out.error("internal_error", "the proxy failed this session")

    async def _step(self, item: object) -> bool:
        """Handle one input; False: the session ends."""
        # No checkpoint in the middle of one input's actions (e.g. a redial).
        self.persister.idle.clear()
        try:
            await self._dispatch(item)
        finally:
            self.persister.idle.set()
            self.persister.poke()  # checkpoint what changed (no polling)
        if not self.inputs.empty():
            # With a backlog, get() would not yield: a checkpoint (a flush, a
            # resume) waiting for this pause between inputs would never run.
            await asyncio.sleep(0)
        if self.actions.standing_down:
            return False
        if self.out.grace_over():
            self.log.info("session_expired", reason="disconnect grace elapsed")
            return False
        return True

    async def _dispatch(self, item: object) -> None:
        if not isinstance(item, Tick):
            self.ticker.stir(now_ms())
        if isinstance(item, FromClient):
            try:
                if item.client is self.out.client:
                    await self._client_input(item.frame)
            finally:
                if item.credited:
                    self.credits.release(len(item.frame.raw))
        elif isinstance(item, Attach):
            if self.attachments.end is not None:
                return  # the session is ending: ``stop`` closes it
            item.client.end_by(self.ends_at)
            self.parked_at = None
            await self.out.attach(item, self.shim.config.input_format)  # the clock's start
            await self.handle(ClientPresence(True, now_ms()))  # GA's idle timeout goes on
        elif isinstance(item, Detached):
            await on_detach(self, item.client)
        elif isinstance(item, Execute):
            await self.actions.run(item.actions)
        elif isinstance(item, FromUpstream):
            try:
                if item.ws is self.upstream.ws:
                    await self.handle(item.event)
            finally:
                self.upstream.room.release(len(item.event.raw))
        elif isinstance(item, InLoop):
            await item.run()  # e.g. a redialled upstream attached (upstream_control.py)
        else:
            await self.handle(cast(Input, item))

    async def handle(self, event: Input) -> None:
        await self.actions.run(self.shim.handle(event))

    async def _client_input(self, frame: ClientFrame) -> None:
        ev = frame.event
        event_id = ev.get("event_id")
        if isinstance(event_id, str) and self.recent.seen(event_id):
            return  # re-sent after a reconnect: already applied (shim/journal.py)
        if not await answer_control(ev, self):
            await self.handle(ClientEvent(ev, frame.raw, now_ms(), frame.read_ms))

    async def close_by_client(self, reason: str) -> None:
        """The client ends the session: no grace, nothing to resume."""
        await close_by_client(self, reason)
