"""The I/O edge of the emulated modes: feed the shim, execute what it returns.

Everything that happens to a session (a client frame, an upstream frame, a VAD
result, a clock tick) becomes one typed input on one queue, handled strictly in
order by the pure shim (``shim/``); its actions are executed here. The proxy owns
the client-facing session in these modes: its own ``server_event_seq``, replay log
and client event de-duplication (DESIGN §6).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, cast

import aiohttp
import orjson

from proxy.client_io import CLOSED, ClientFrame
from proxy.upstream import UpstreamLink, UpstreamUnavailable, dial, opening_update, redial_turn
from shim.actions import (
    AbortUpstream,
    Action,
    AnalyzeAudio,
    CloseClient,
    ForwardUpstream,
    SendClient,
    SendClientAudio,
    SendUpstream,
)
from shim.capabilities import Classification
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent, Input, Tick, UpstreamEvent, UpstreamLost, VadWindow
from shim.journal import Journal, RecentIds
from shim.session import EmulatedSession, ShimSettings
from shim.session_config import session_object
from shim.vad_gate import VadParams

if TYPE_CHECKING:
    from proxy.pump import ClientSession

TICK_S = 0.05
_STOP = object()


def now_ms() -> float:
    return time.monotonic() * 1000.0


def shim_settings(session: ClientSession) -> ShimSettings:
    v = session.state.config.vad
    return ShimSettings(
        vad=VadParams(
            threshold=v.threshold,
            prefix_padding_ms=v.prefix_padding_ms,
            silence_duration_ms=v.silence_duration_ms,
            min_speech_ms=v.min_speech_ms,
        ),
        min_barge_in_ms=v.min_barge_in_ms,
        echo_suppression=v.echo_suppression,
    )


class EmulatedRunner:
    def __init__(
        self,
        session: ClientSession,
        link: UpstreamLink,
        cls: Classification,
        model: str,
        upstream_model: str,
    ) -> None:
        self.session = session
        self.client = session.client
        self.link = link
        self.cls = cls
        self.model = model
        self.upstream_model = upstream_model
        store_cfg = session.state.config.store
        self.journal = Journal(
            session.session_id[-8:], store_cfg.replay_max_bytes, store_cfg.replay_max_age_s * 1000
        )
        self.recent = RecentIds(store_cfg.recent_event_ids)
        settings = shim_settings(session)
        self.shim: EmulatedSession
        if cls.kind == "turn":
            self.shim = TurnBasedSession(session.session_id, model, upstream_model, settings)
        else:
            self.shim = BargeInRelaySession(
                session.session_id, model, settings, cls.upstream_capabilities
            )
        self.inputs: asyncio.Queue[Input | object] = asyncio.Queue()
        self.vad_queue: asyncio.Queue[AnalyzeAudio | None] = asyncio.Queue()
        self.vad_stream: Any = None
        self.up = link.ws
        self._up_task: asyncio.Task[None] | None = None
        self._closing = False

    # ------------------------------------------------------------------ run
    async def run(self) -> None:
        self.client.send_event(self._created())
        tasks = [
            asyncio.create_task(self._feed_client(), name="feed-client"),
            asyncio.create_task(self._tick(), name="tick"),
            asyncio.create_task(self._vad_worker(), name="vad"),
        ]
        self._up_task = asyncio.create_task(self._feed_upstream(self.up), name="feed-upstream")
        try:
            await self._loop()
        finally:
            self._closing = True
            for task in [*tasks, self._up_task]:
                task.cancel()
            for task in [*tasks, self._up_task]:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            with contextlib.suppress(Exception):
                await self.up.close()

    def _created(self) -> dict[str, Any]:
        from shim.capabilities import proxy_capabilities

        caps = proxy_capabilities(self.cls, resume_available=False)
        session = session_object(self.session.session_id, self.model, self.shim.config)
        if self.cls.kind == "duplex":
            upstream_session = self.link.created.get("session")
            if isinstance(upstream_session, dict):
                session = {**upstream_session, **session}
        session["capabilities"] = caps
        return {"type": "session.created", "session": session}

    async def _loop(self) -> None:
        # Client frames that arrived during the handshake come first, in order.
        for frame in self.session.pending:
            if frame is self.link.opening_event and self.cls.kind == "duplex":
                # Already applied upstream when it opened the session; apply locally only.
                self.shim.apply_update(frame.event)
                continue
            await self._client_input(frame)
        self.session.pending.clear()
        while True:
            item = await self.inputs.get()
            if item is _STOP:
                return
            if isinstance(item, ClientFrame):
                await self._client_input(item)
                continue
            await self._execute(self.shim.handle(cast(Input, item)))
            if self._closing:
                return

    async def _client_input(self, frame: ClientFrame) -> None:
        ev = frame.event
        kind = ev["type"]
        event_id = ev.get("event_id")
        if isinstance(event_id, str) and self.recent.seen(event_id):
            return  # re-sent after a reconnect: already applied
        if kind == "session.event_ack":
            seq = ev.get("server_event_seq")
            if isinstance(seq, bool) or not isinstance(seq, int) or not self.journal.ack(seq):
                self.client.send_error(
                    "invalid_event_ack", "server_event_seq must be a sequence number already sent"
                )
            return
        if kind == "session.resume":
            self.client.send_error(
                "invalid_session_resume",
                "session.resume must be the first event of a new connection",
            )
            return
        if kind == "session.heartbeat" and self.cls.kind == "turn":
            self._to_client(
                {"type": "session.heartbeat_ack", "session_id": self.session.session_id}
            )
            return
        await self._execute(self.shim.handle(ClientEvent(ev, frame.raw, now_ms())))

    # ------------------------------------------------------------------ actions
    async def _execute(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, SendClient | SendClientAudio):
                self._to_client(action.event)
            elif isinstance(action, AnalyzeAudio):
                self.vad_queue.put_nowait(action)
            elif isinstance(action, SendUpstream):
                await self._to_upstream(orjson.dumps(action.event).decode())
            elif isinstance(action, ForwardUpstream):
                await self._to_upstream(action.raw)
            elif isinstance(action, AbortUpstream):
                await self._redial(action)
            elif isinstance(action, CloseClient):
                await self.client.close(action.code, action.reason)
                self._closing = True

    def _to_client(self, event: dict[str, Any]) -> None:
        text = self.journal.stamp(event, now_ms())
        metrics = self.session.state.metrics
        metrics.frames.labels("upstream_to_client").inc()
        metrics.bytes.labels("upstream_to_client").inc(len(text))
        self.client.send_text(text)

    async def _to_upstream(self, text: str) -> None:
        try:
            await self.up.send_str(text)
        except (ConnectionResetError, RuntimeError, aiohttp.ClientError):
            pass  # the upstream reader reports the loss

    async def _redial(self, action: AbortUpstream) -> None:
        """Drop the upstream socket (the turn dialect's only abort) and open a fresh one."""
        metrics = self.session.state.metrics
        if self._up_task is not None:
            self._up_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._up_task
        with contextlib.suppress(Exception):
            await self.up.close()
        if not action.redial:
            return
        state, cfg = self.session.state, self.session.state.config.server
        assert state.http is not None and self.session.route is not None
        try:
            if self.cls.kind == "turn":
                self.up = await redial_turn(
                    state.http,
                    self.link.url,
                    self.session.route,
                    cfg.upstream_connect_timeout_s,
                    cfg.classify_timeout_s,
                )
            else:
                opener = opening_update(self.session.route, self.upstream_model, None)
                link = await dial(
                    state.http,
                    state.upstream_url(self.session.route),
                    self.session.route,
                    opener,
                    cfg.upstream_connect_timeout_s,
                    cfg.classify_timeout_s,
                )
                self.up = link.ws
        except UpstreamUnavailable as exc:
            metrics.upstream_errors.labels("connect").inc()
            self.session.log.warning("upstream_redial_failed", error=str(exc))
            self.client.send_error(
                "upstream_unavailable", f"upstream lost and not reachable: {exc}"
            )
            await self.client.close(1011, "upstream unavailable")
            self._closing = True
            return
        self._up_task = asyncio.create_task(self._feed_upstream(self.up), name="feed-upstream")

    # ------------------------------------------------------------------ feeders
    async def _feed_client(self) -> None:
        while True:
            item = await self.client.inbox.get()
            if item is CLOSED:
                await self.inputs.put(_STOP)
                return
            await self.inputs.put(item)

    async def _feed_upstream(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                event = orjson.loads(msg.data)
            except orjson.JSONDecodeError:
                self.session.state.metrics.upstream_errors.labels("protocol").inc()
                continue
            if isinstance(event, dict):
                await self.inputs.put(UpstreamEvent(event, msg.data, now_ms()))
        if not self._closing:
            self.session.state.metrics.upstream_errors.labels("closed").inc()
            self.session.log.warning("upstream_lost", close_code=ws.close_code)
            await self.inputs.put(UpstreamLost(f"upstream closed ({ws.close_code})", now_ms()))

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            await self.inputs.put(Tick(now_ms()))

    async def _vad_worker(self) -> None:
        vad = self.session.state.vad_runner()
        stream = vad.new_stream()
        while True:
            job = await self.vad_queue.get()
            if job is None:
                return
            results = await vad.process(stream, job.samples)
            now = now_ms()
            for prob, end in results:
                await self.inputs.put(VadWindow(prob, end, now))

    async def persist(self) -> None:
        """Resume state goes to the store (see proxy/resume.py)."""
