"""Carry out the shim's actions for one emulated session, in order."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import orjson

from proxy.emulated.client_side import ClientSide
from proxy.emulated.faults import report_fault
from proxy.emulated.queue_items import Stop
from proxy.emulated.upstream_control import UpstreamControl
from proxy.logging import Logger
from proxy.metrics import Metrics
from proxy.persist.persister import Persister
from shim.actions import (
    AbortUpstream,
    Action,
    AnalyzeAudio,
    CloseClient,
    ForwardUpstream,
    NoteUpstreamError,
    ReportFault,
    ResumeUpstream,
    SendClient,
    SendClientAudio,
    SendUpstream,
    StandDown,
)


def is_heartbeat(raw: str) -> bool:
    if "session.heartbeat" not in raw:
        return False  # most frames: no parse
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return isinstance(event, dict) and event.get("type") == "session.heartbeat"


SLOW_ACTION_S = 1.0


class ActionRunner:
    def __init__(
        self,
        session_id: str,
        out: ClientSide,
        upstream: UpstreamControl,
        analyze: Callable[[AnalyzeAudio], Awaitable[None]],
        inputs: asyncio.Queue[object],
        persister: Persister,
        metrics: Metrics,
        log: Logger,
    ) -> None:
        self.session_id = session_id
        self.out, self.upstream, self.persister = out, upstream, persister
        self.analyze, self.inputs = analyze, inputs
        self.metrics, self.log = metrics, log
        # The upstream session moved to another replica: this one lets the session go.
        self.standing_down = False
        # Heartbeats forwarded upstream and not answered yet: one that went into a socket
        # the upstream dropped just then is never answered by it, so the proxy answers it
        # once it knows the upstream is lost (as it answers those sent while it redials).
        self.heartbeats_owed = 0

    async def run(self, actions: list[Action]) -> None:
        try:
            await self._run(actions)
        finally:
            self.upstream.settle()

    async def _run(self, actions: list[Action]) -> None:
        # The clock itself: ``loop.time()`` needs the running loop looked up first (in
        # Python 3.11 a getpid system call), per input with actions.
        for action in actions:
            if self.standing_down:
                return
            started = time.monotonic()
            await self._one(action)
            took = time.monotonic() - started
            if took >= SLOW_ACTION_S:
                # The loop answers nothing meanwhile (a resume waits for it too): say
                # which action held it.
                self.log.warning(
                    "session_action_slow", action=type(action).__name__, took_s=round(took, 2)
                )

    def _ack_heartbeats(self, count: int) -> None:
        """Answer ``count`` heartbeats in the upstream's stead (none owed after)."""
        for _ in range(count):
            self.out.send({"type": "session.heartbeat_ack", "session_id": self.session_id})
        self.heartbeats_owed = 0

    async def _one(self, action: Action) -> None:
        if isinstance(action, SendClient | SendClientAudio):
            if self.heartbeats_owed and action.event.get("type") == "session.heartbeat_ack":
                self.heartbeats_owed -= 1
            self.out.send(action.event)
        elif isinstance(action, AnalyzeAudio):
            # Bounded: if the VAD falls behind, the loop waits, and so does the client.
            await self.analyze(action)
        elif isinstance(action, SendUpstream):
            await self.upstream.send(orjson.dumps(action.event).decode())
        elif isinstance(action, ForwardUpstream):
            heartbeat = is_heartbeat(action.raw)
            if heartbeat and self.upstream.redialing:
                # The upstream would answer it; while it is being reached again
                # the proxy does, so a client's liveness check does not fail.
                self._ack_heartbeats(self.heartbeats_owed + 1)
                return
            self.heartbeats_owed += heartbeat
            await self.upstream.send(action.raw)
        elif isinstance(action, AbortUpstream):
            await self.upstream.redial(action)
            self._ack_heartbeats(self.heartbeats_owed)
        elif isinstance(action, ResumeUpstream):
            await self.upstream.reattach(action)
            self._ack_heartbeats(self.heartbeats_owed)
        elif isinstance(action, StandDown):
            self.persister.let_go()
            self.log.info("session_taken_over", reason=action.reason)
            self.standing_down = True
        elif isinstance(action, ReportFault):
            report_fault(self.log, self.metrics, self.session_id, action)
        elif isinstance(action, NoteUpstreamError):
            self.metrics.upstream_errors.labels("own_command").inc()
            self.log.info("upstream_refused_own_command", code=action.code, error=action.message)
        elif isinstance(action, CloseClient):
            await self.inputs.put(Stop())
