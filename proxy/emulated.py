"""The I/O edge of the emulated modes: feed the shim, execute what it returns.

Everything that happens to a session (a client frame, an upstream frame, a VAD
result, a clock tick, a client attaching or leaving) becomes one input on one
queue, handled strictly in order; shim inputs go to the pure core (``shim/``) and
its actions are executed here. The proxy owns the client-facing session in these
modes: its own ``server_event_seq``, replay log and client event de-duplication
(DESIGN §6). A session outlives its connection for ``disconnect_grace_s`` so the
client can resume, here or (through the store) on another replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any, cast

import aiohttp
import orjson

from proxy.client_io import CLOSED, ClientChannel, ClientFrame
from proxy.clock import now_ms
from proxy.config import Route
from proxy.logging import Logger
from proxy.persist.persister import Persister
from proxy.persist.port import StoredFacts
from proxy.state import ProxyState
from proxy.upstream import (
    UpstreamRefused,
    UpstreamUnavailable,
    dial,
    opening_update,
    redial_turn,
    resume_upstream,
)
from shim.actions import (
    AbortUpstream,
    Action,
    AnalyzeAudio,
    CloseClient,
    ForwardUpstream,
    ResumeUpstream,
    SendClient,
    SendClientAudio,
    SendUpstream,
    StandDown,
)
from shim.capabilities import Classification, proxy_capabilities
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import (
    ClientEvent,
    Input,
    Tick,
    UpstreamCheckpointed,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
    VadWindow,
)
from shim.journal import Journal, RecentIds
from shim.session import EmulatedSession, ShimSettings
from shim.session_config import session_object
from shim.vad_gate import VadParams

TICK_S = 0.05
VAD_BACKLOG = 256  # audio chunks waiting for the VAD (~5 s of 20 ms appends)


@dataclass
class Attach:
    client: ClientChannel
    first_events: list[dict[str, Any]]  # session.created / session.resumed
    done: asyncio.Event
    # Resume: everything this replica journaled after ``replay_after``.
    replay_after: int | None = None


@dataclass
class Execute:
    """Actions to run in order with everything else (e.g. after a restore)."""

    actions: list[Action]


@dataclass
class FromUpstream:
    """An upstream event, from the socket it came on: one from a socket the session
    has since replaced is dropped."""

    ws: aiohttp.ClientWebSocketResponse
    event: UpstreamEvent


@dataclass
class Detached:
    client: ClientChannel


@dataclass
class FromClient:
    client: ClientChannel
    frame: ClientFrame


class _Stop:
    pass


def shim_settings(state: ProxyState) -> ShimSettings:
    v = state.config.vad
    return ShimSettings(
        vad=VadParams(
            threshold=v.threshold,
            prefix_padding_ms=v.prefix_padding_ms,
            silence_duration_ms=v.silence_duration_ms,
            min_speech_ms=v.min_speech_ms,
        ),
        min_barge_in_ms=v.min_barge_in_ms,
        hold_min_speech_ms=v.hold_min_speech_ms,
        echo_suppression=v.echo_suppression,
    )


def live_runner(state: ProxyState, session_id: str) -> EmulatedRunner | None:
    """The emulated session alive on this replica under ``session_id``, if any."""
    runner = state.live.get(session_id)
    return runner if isinstance(runner, EmulatedRunner) else None


class EmulatedRunner:
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
        self.state = state
        self.session_id = session_id
        self.route = route
        self.cls = cls
        self.model = model
        self.upstream_model = upstream_model
        self.up = upstream
        self.upstream_url = upstream_url
        self.upstream_created = upstream_created
        self.log = log
        store_cfg = state.config.store
        self.journal = Journal(
            session_id[-8:],
            store_cfg.replay_max_bytes,
            store_cfg.replay_max_age_s * 1000,
            start_seq,
        )
        self.recent = RecentIds(store_cfg.recent_event_ids)
        settings = shim_settings(state)
        self.shim: EmulatedSession
        if cls.kind == "turn":
            self.shim = TurnBasedSession(session_id, model, upstream_model, settings)
        else:
            self.shim = BargeInRelaySession(session_id, model, settings, cls.upstream_capabilities)
        self.inputs: asyncio.Queue[object] = asyncio.Queue()
        # Bounded: if the VAD falls behind, the session stops reading the client
        # (whose own queue and socket then push back) instead of growing memory.
        self.vad_queue: asyncio.Queue[AnalyzeAudio] = asyncio.Queue(VAD_BACKLOG)
        self.client: ClientChannel | None = None
        self._attached: Attach | None = None
        self._grace_deadline: float | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._up_task: asyncio.Task[None] | None = None
        self.finished = asyncio.Event()
        self.persister = Persister(self, state)
        self._ended = False
        self._close_reason: str | None = None
        # The upstream session moved to another replica: this one lets the session go.
        self._standing_down = False
        self._closers: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ persisted
    def stored_facts(self) -> StoredFacts:
        cls = self.cls
        return StoredFacts(
            model=self.model,
            mode=cls.mode,
            upstream={
                "route": self.route.model,
                "url": self.upstream_url,
                "kind": cls.kind,
                "upstream_model": self.upstream_model,
                "capabilities": dict(cls.upstream_capabilities or {}),
                "reasons": list(cls.reasons),
                "created": self.upstream_created,
            },
        )

    def snapshot(self) -> dict[str, Any]:
        return self.shim.snapshot()

    def upstream_position(self) -> tuple[str, int] | None:
        return self.shim.upstream_position()

    def upstream_checkpointed(self, session_id: str, seq: int) -> None:
        self.inputs.put_nowait(UpstreamCheckpointed(session_id, seq, now_ms()))

    # ------------------------------------------------------------------ lifecycle
    def bind_upstream(self, created: dict[str, Any]) -> None:
        """The upstream session the shim relays (its id and resume token, if it has them)."""
        if isinstance(self.shim, BargeInRelaySession):
            self.shim.bind_upstream(created)

    def start(self) -> None:
        self.state.live[self.session_id] = self
        self._tasks = [
            asyncio.create_task(self._loop(), name="session-loop"),
            asyncio.create_task(self._tick(), name="tick"),
            asyncio.create_task(self._vad_worker(), name="vad"),
            asyncio.create_task(self.persister.run(), name="persist"),
        ]
        self._up_task = asyncio.create_task(self._feed_upstream(self.up), name="feed-upstream")

    async def attach(
        self,
        attach: Attach,
        pending: list[ClientFrame] | None = None,
        after: list[Action] | None = None,
    ) -> None:
        """Hand the session a client connection; returns when that attachment ends.

        ``after`` runs right after the attach (a restore's closing events); ``pending``
        are frames the client sent before the session was ready, applied next in order.
        """
        await self.inputs.put(attach)
        if after:
            await self.inputs.put(Execute(after))
        for frame in pending or []:
            await self.inputs.put(FromClient(attach.client, frame))
        reader = asyncio.create_task(self._feed_client(attach.client), name="feed-client")
        try:
            await attach.done.wait()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    def created_event(self, resume_token: str | None) -> dict[str, Any]:
        caps = proxy_capabilities(
            self.cls,
            resume_available=resume_token is not None,
            barge_in_target_ms=self.state.config.vad.target_barge_in_latency_ms,
        )
        session = session_object(self.session_id, self.model, self.shim.config)
        if self.cls.kind == "duplex":
            upstream_session = self.upstream_created.get("session")
            if isinstance(upstream_session, dict):
                session = {**upstream_session, **session}
        session["capabilities"] = caps
        event: dict[str, Any] = {"type": "session.created", "session": session}
        if resume_token is not None:
            event["resume_token"] = resume_token
        return event

    async def stop(self, code: int = 1000, reason: str = "session ended") -> None:
        if self._ended:
            return
        self._ended = True
        attached = self._attached  # a Detached input may run while the close is awaited
        if attached is not None:
            await attached.client.close(code, reason)
            attached.done.set()
        # 1012 (drain) means "resume elsewhere": keep it; any other end is final.
        await self.persister.finish(final=code != 1012)
        for task in [*self._tasks, *([self._up_task] if self._up_task else [])]:
            if task is not asyncio.current_task():
                task.cancel()
        with contextlib.suppress(Exception):
            await self.up.close()
        if self.state.live.get(self.session_id) is self:
            del self.state.live[self.session_id]
        self.finished.set()

    async def replaced_elsewhere(self) -> None:
        """Another replica resumed this session: tell the client here and let go."""
        if self._attached is not None:
            self._attached.client.send_event(
                {"type": "session.replaced", "session_id": self.session_id}
            )
        await self.stop(1000, "session_replaced")

    async def drain(self) -> None:
        """Shutdown: persist everything, then close with 1012 so the client resumes elsewhere."""
        await self.persister.flush()
        await self.stop(1012, "service restart")

    # ------------------------------------------------------------------ the loop
    async def _loop(self) -> None:
        try:
            while True:
                item = await self.inputs.get()
                if isinstance(item, _Stop):
                    break
                # No checkpoint in the middle of one input's actions (e.g. a redial).
                self.persister.idle.clear()
                try:
                    await self._dispatch(item)
                finally:
                    self.persister.idle.set()
                if self._standing_down:
                    break
                if self._grace_deadline is not None and time.monotonic() > self._grace_deadline:
                    self.log.info("session_expired", reason="disconnect grace elapsed")
                    break
        except Exception:
            self.log.exception("session_loop_failed")
            if self.client is not None:
                self.client.send_error("internal_error", "the proxy failed this session")
        if self._standing_down:
            await self.replaced_elsewhere()
        if self._close_reason is not None:
            await self.stop(1000, self._close_reason)
        await self.stop(1011, "session ended")

    async def _dispatch(self, item: object) -> None:
        if isinstance(item, FromClient):
            if item.client is self.client:
                await self._client_input(item.frame)
        elif isinstance(item, Attach):
            await self._on_attach(item)
        elif isinstance(item, Detached):
            self._on_detach(item.client)
        elif isinstance(item, Execute):
            await self._execute(item.actions)
        elif isinstance(item, FromUpstream):
            if item.ws is self.up:
                await self._execute(self.shim.handle(item.event))
        else:
            await self._execute(self.shim.handle(cast(Input, item)))

    async def _on_attach(self, attach: Attach) -> None:
        replay: list[str] = []
        if attach.replay_after is not None:
            local = self.journal.after(attach.replay_after, now_ms())
            if local is None:
                # Trimmed meanwhile: a partial replay would lose events. The old
                # connection (if any) keeps the session.
                attach.client.send_error(
                    "session_resume_gap", "events after that seq are no longer kept"
                )
                await attach.client.close(1008, "resume gap")
                attach.done.set()
                return
            replay = local
        old = self._attached
        if old is not None:
            old.client.send_event({"type": "session.replaced", "session_id": self.session_id})
            self._closers.add(
                asyncio.get_running_loop().create_task(old.client.close(1000, "session_replaced"))
            )
            self._closers = {t for t in self._closers if not t.done()}
            old.done.set()
        self._attached, self.client = attach, attach.client
        self._grace_deadline = None
        for event in attach.first_events:
            attach.client.send_event(event)
        for text in replay:
            attach.client.send_text(text)

    def _on_detach(self, client: ClientChannel) -> None:
        if client is not self.client:
            return
        assert self._attached is not None
        self._attached.done.set()
        self._attached = self.client = None
        self._grace_deadline = time.monotonic() + self.state.config.store.disconnect_grace_s
        self.persister.poke()  # a resume elsewhere finds everything the client received
        self.log.info("client_detached", grace_s=self.state.config.store.disconnect_grace_s)

    async def _client_input(self, frame: ClientFrame) -> None:
        ev = frame.event
        kind = ev["type"]
        event_id = ev.get("event_id")
        if isinstance(event_id, str) and self.recent.seen(event_id):
            return  # re-sent after a reconnect: already applied
        if kind == "session.event_ack":
            seq = ev.get("server_event_seq")
            if isinstance(seq, bool) or not isinstance(seq, int) or not self.journal.ack(seq):
                self._error(
                    "invalid_event_ack", "server_event_seq must be a sequence number already sent"
                )
            return
        if kind == "session.resume":
            self._error(
                "invalid_session_resume",
                "session.resume must be the first event of a new connection",
            )
            return
        if kind == "session.close":
            # The client ends the session: no grace, nothing to resume.
            reason = ev.get("reason") if isinstance(ev.get("reason"), str) else "client_close"
            self._to_client(
                {"type": "session.closed", "session_id": self.session_id, "reason": reason}
            )
            self.persister.enabled = False
            with contextlib.suppress(Exception):
                if self.state.store is not None:
                    await self.state.store.delete(self.session_id, self.persister.epoch)
            self._close_reason = reason
            await self.inputs.put(_Stop())
            return
        if kind == "session.heartbeat" and self.cls.kind == "turn":
            self._to_client({"type": "session.heartbeat_ack", "session_id": self.session_id})
            return
        await self._execute(self.shim.handle(ClientEvent(ev, frame.raw, now_ms())))

    def _error(self, code: str, message: str) -> None:
        if self.client is not None:
            self.client.send_error(code, message)

    # ------------------------------------------------------------------ actions
    async def _execute(self, actions: list[Action]) -> None:
        for action in actions:
            if self._standing_down:
                return
            if isinstance(action, SendClient | SendClientAudio):
                self._to_client(action.event)
            elif isinstance(action, AnalyzeAudio):
                await self.vad_queue.put(action)
            elif isinstance(action, SendUpstream):
                await self._to_upstream(orjson.dumps(action.event).decode())
            elif isinstance(action, ForwardUpstream):
                await self._to_upstream(action.raw)
            elif isinstance(action, AbortUpstream):
                await self._redial(action)
            elif isinstance(action, ResumeUpstream):
                await self._reattach(action)
            elif isinstance(action, StandDown):
                self.persister.let_go()
                self.log.info("session_taken_over", reason=action.reason)
                self._standing_down = True
                return
            elif isinstance(action, CloseClient):
                await self.inputs.put(_Stop())

    def _to_client(self, event: dict[str, Any]) -> None:
        text = self.journal.stamp(event, now_ms())
        if event.get("type") == "response.done":
            self.state.metrics.responses.labels(self.cls.mode, event["response"]["status"]).inc()
            details = event["response"].get("status_details") or {}
            if details.get("reason") == "turn_detected":
                self.state.metrics.barge_ins.labels(self.cls.mode).inc()
        if self.client is not None:
            metrics = self.state.metrics
            metrics.frames.labels("upstream_to_client").inc()
            metrics.bytes.labels("upstream_to_client").inc(len(text))
            self.client.send_text(text)

    async def _to_upstream(self, text: str) -> None:
        with contextlib.suppress(ConnectionResetError, RuntimeError, aiohttp.ClientError):
            await self.up.send_str(text)

    async def _redial(self, action: AbortUpstream) -> None:
        """Drop the upstream socket and open a fresh upstream session: the turn
        dialect's only abort, and the way on when an upstream session is lost."""
        if self._up_task is not None and self._up_task is not asyncio.current_task():
            self._up_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._up_task
        with contextlib.suppress(Exception):
            await self.up.close()
        if not action.redial:
            return
        try:
            self.up, created = await self.open_fresh_upstream()
        except (UpstreamUnavailable, UpstreamRefused) as exc:
            self.state.metrics.upstream_errors.labels("connect").inc()
            self.log.warning("upstream_redial_failed", error=str(exc))
            self._error("upstream_unavailable", f"upstream lost and not reachable: {exc}")
            await self.inputs.put(_Stop())
            return
        self._up_task = asyncio.create_task(self._feed_upstream(self.up), name="feed-upstream")
        if action.after_loss:
            self.state.metrics.upstream_reattach.labels("fresh").inc()
        await self._execute(self.shim.handle(UpstreamReattached(created, now_ms())))

    async def open_fresh_upstream(
        self,
    ) -> tuple[aiohttp.ClientWebSocketResponse, dict[str, Any]]:
        """A new upstream session and its ``session.created``."""
        http, cfg = self.state.http, self.state.config.server
        assert http is not None
        if self.cls.kind == "turn":
            ws = await redial_turn(
                http,
                self.upstream_url,
                self.route,
                cfg.upstream_connect_timeout_s,
                cfg.classify_timeout_s,
            )
            return ws, {}
        link = await dial(
            http,
            self.state.upstream_url(self.route),
            self.route,
            opening_update(self.route, self.upstream_model, None),
            cfg.upstream_connect_timeout_s,
            cfg.classify_timeout_s,
        )
        return link.ws, link.created

    async def _reattach(self, action: ResumeUpstream) -> None:
        """The upstream socket dropped: resume the upstream's own session on a new one.

        The upstream replays what the proxy had not handled and the session goes on;
        if it cannot (restarted, expired, journal gone), the shim hears so and falls
        back to a fresh upstream session.
        """
        http, cfg = self.state.http, self.state.config.server
        assert http is not None
        try:
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
            )
        except (UpstreamUnavailable, UpstreamRefused) as exc:
            self.log.warning("upstream_resume_failed", error=str(exc)[:200], effect="fresh session")
            lost = UpstreamLost("the upstream could not resume its session", now_ms(), False)
            await self._execute(self.shim.handle(lost))
            return
        self.up = link.ws
        self._up_task = asyncio.create_task(self._feed_upstream(self.up), name="feed-upstream")
        self.state.metrics.upstream_reattach.labels("resumed").inc()
        self.log.info("upstream_resumed", after_seq=action.after_seq)
        await self._execute(self.shim.handle(UpstreamReattached(link.created, now_ms())))

    # ------------------------------------------------------------------ feeders
    async def _feed_client(self, client: ClientChannel) -> None:
        while True:
            item = await client.inbox.get()
            if item is CLOSED:
                await self.inputs.put(Detached(client))
                return
            assert isinstance(item, ClientFrame)
            await self.inputs.put(FromClient(client, item))

    async def _feed_upstream(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                event = orjson.loads(msg.data)
            except orjson.JSONDecodeError:
                self.state.metrics.upstream_errors.labels("protocol").inc()
                continue
            if isinstance(event, dict):
                await self.inputs.put(FromUpstream(ws, UpstreamEvent(event, msg.data, now_ms())))
        if not self._ended:
            self.state.metrics.upstream_errors.labels("closed").inc()
            self.log.warning("upstream_lost", close_code=ws.close_code)
            await self.inputs.put(UpstreamLost(f"upstream closed ({ws.close_code})", now_ms()))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            await self.inputs.put(Tick(now_ms()))

    async def _vad_worker(self) -> None:
        vad = self.state.vad_runner()
        stream = vad.new_stream()
        while True:
            job = await self.vad_queue.get()
            results = await vad.process(stream, job.samples)
            now = now_ms()
            for prob, end in results:
                await self.inputs.put(VadWindow(prob, end, now))
