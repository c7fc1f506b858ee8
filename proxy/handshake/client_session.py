"""``ClientSession``: one client connection's handshake: a resume, or route it,
open and classify the upstream, and hand it to its mode."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from typing import Any

from aiohttp import web

from proxy.auth.admission import principal_of
from proxy.capacity import refusal, refuse
from proxy.client_frames import ClientFrame
from proxy.client_io import ClientChannel
from proxy.config import Route
from proxy.emulated.queue_items import Attach
from proxy.emulated.runner import EmulatedRunner
from proxy.emulated.shim_setup import keep_opened_with, take_opening
from proxy.emulated.slot_yield import make_room
from proxy.handshake.client_kind import client_kind, model_from
from proxy.handshake.first_frame import next_client_frame, promises_first_event, refuse_late_opening
from proxy.handshake.open_upstream import abandon, open_upstream, refused_opening
from proxy.logging import get_logger
from proxy.passthrough.relay import run_passthrough
from proxy.resume.native_answer import tell_failed_resume
from proxy.resume.request import ResumeFailed, parse_resume, resume_from_query
from proxy.resume.takeover import resume
from proxy.state import ProxyState
from proxy.upstream import UpstreamLink
from shim.capabilities import Classification, classify


class ClientSession:
    """Owns one client connection from accept to close."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request, state: ProxyState) -> None:
        self.state = state
        self.request = request
        cfg = state.config.server
        self.client = ClientChannel(
            ws,
            state.metrics,
            cfg.pending_client_frames,
            cfg.client_send_queue_frames,
            cfg.client_send_queue_bytes,
            request.transport,
            cfg,
        )
        self.client.native = client_kind(request) == "native"
        self.client.rate.clock.for_client(self.client.native)
        self.session_id = "sess_" + uuid.uuid4().hex
        self.log = get_logger(session_id=self.session_id, replica_id=state.replica_id)
        self.principal = principal_of(request)
        self.key_id = self.principal.id
        if self.key_id:
            self.log = self.log.bind(key_id=self.key_id)
        self.mode: str | None = None
        self.route: Route | None = None
        self.pending: list[ClientFrame] = []
        self.runner: EmulatedRunner | None = None
        # The upstream session a passthrough connection serves (event id de-duplication).
        self.passthrough_sid: str | None = None
        self._accepted_at = time.monotonic()
        # Cleared once a resume or an opening begins to rotate a token or store a
        # session (``committing``): the client must learn it before a drain closes it.
        self.settled = asyncio.Event()
        self.settled.set()
        # The client has its session's opening (its token): a drain closes it plainly.
        self.opened = False
        # Attached to an emulated session: its own drain closes the client.
        self.handed = False
        self.task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ run
    async def run(self) -> None:
        self.task = asyncio.current_task()
        self.client.start()
        try:
            await self._run()
        except Exception:  # a cancellation is no Exception: it goes on up
            self.log.exception("session_failed")
            # What the client is owed (a held response end) goes before the error.
            error = ("internal_error", "the proxy failed this session")
            await self.client.end(None, 1011, "internal error", *error)
        finally:
            self.settled.set()
            if self.mode == "passthrough":  # an emulated session is counted by its runner
                self.state.metrics.sessions_active.labels(self.mode, *self._labels()).dec()
            await self.client.stop()
            self.log.info("session_closed", mode=self.mode, close_code=self.client.close_code)

    def _labels(self) -> tuple[str, str]:
        """The route and model labels: from the config, never what the client asked."""
        route = self.route
        assert route is not None
        return route.model, route.upstream_model or route.model

    async def _run(self) -> None:
        state, cfg = self.state, self.state.config
        query = self.request.query
        model = query.get("model") or None
        # A speak-first client's first event arrives right away; a GA client waits for
        # session.created, so it only costs first_event_wait_ms. Without a model in
        # the URL, or when the client says it will speak first, the first event must
        # come (proxy/handshake/first_frame.py).
        promised = promises_first_event(query)
        wait = cfg.server.handshake_timeout_s
        if model and not promised:
            wait = cfg.server.first_event_wait_ms / 1000
        from_query = resume_from_query(query)
        first = None if from_query else await next_client_frame(self.client, self.pending, wait)
        if first is None and promised and not from_query:
            await refuse_late_opening(self.client)
            return
        if from_query or (first is not None and first.event.get("type") == "session.resume"):
            event, raw = from_query if from_query else (first.event, first.raw)  # type: ignore[union-attr]
            sid = event.get("session_id")
            self.passthrough_sid = sid if isinstance(sid, str) else None
            if first is not None:
                self.pending.remove(first)
                first = None
            failed = await self._try_resume(event, raw)
            if failed is None:
                return
            if state.draining:  # told server_shutting_down (proxy/resume/takeover.py)
                await self.client.close(1012, "draining")
                return
            if model is None or promised:  # nothing opens but what the client asked for
                await self.client.close(*failed.close())
                return
        if first is not None and model is None:
            model = model_from(first.event)
        model = model or cfg.default_model
        if state.draining:
            await self._shutting_down()
            return
        route = cfg.route_for(model) if model else None
        if route is None or model is None:
            self.client.send_error(
                "model_not_found",
                f"no route for model {model!r}"
                if model
                else "name a model: ?model=... or session.update",
            )
            await self.client.close(1008, "model not found")
            return
        if not self.principal.allows(model, route.model):
            # Checked before the upgrade when ?model= names it (proxy/auth/admission.py).
            self.client.send_error("route_not_allowed", f"these credentials may not open {model!r}")
            await self.client.close(1008, "route not allowed")
            return
        await make_room(state, route)  # a hung-up session's slot, if that is what it takes
        full = refusal(state, route)  # the replica, the route, the route's upstream
        if full is not None:
            await refuse(self.client, full)
            return
        self.route = route  # holds a session slot from here (see ``slot``)
        self.log = self.log.bind(model=model, route=route.model)
        upstream_model = route.upstream_model or model
        kind = client_kind(self.request)
        link = await open_upstream(self, route, upstream_model, first, ga=kind == "ga")
        if link is None:
            return
        cls = classify(
            link.created,
            forced=route.mode,
            duplex_refused=link.duplex_refused,
            client=kind,
            ga_passthrough=route.ga_passthrough,
        )
        if state.draining:  # nothing is stored or handed on from here
            await abandon(link, cls.kind == "duplex")
            await self._shutting_down()
            return
        self.committing()  # no await since the check: a drain now waits for the client
        self.mode = cls.mode
        state.metrics.sessions_total.labels(cls.mode, *self._labels()).inc()
        self.log = self.log.bind(mode=cls.mode)
        self.log.info("session_open", upstream_kind=cls.kind, reasons=list(cls.reasons))
        if cls.mode == "passthrough":
            # Sessions are counted, not connections: a passthrough session is its
            # connection; an emulated one counts from its runner's start to its end.
            state.metrics.sessions_active.labels(cls.mode, *self._labels()).inc()
            await run_passthrough(self, link, cls)
            return
        if await refused_opening(self.client, link, cls):
            return
        await self._run_emulated(link, cls, model, upstream_model)

    async def _shutting_down(self) -> None:
        self.client.send_error("server_shutting_down", "this replica is draining; reconnect")
        await self.client.close(1012, "draining")

    async def _try_resume(self, event: dict[str, Any], raw: str) -> ResumeFailed | None:
        """Resume; on failure tell the client why (it may start fresh or try again) and
        return the failure."""
        try:
            await resume(self, parse_resume(event, raw))
        except ResumeFailed as exc:
            self.log.info("resume_failed", code=exc.code, token_given=bool(exc.resume_token))
            self.settled.set()  # nothing more to write: a drain from here refuses the client
            tell_failed_resume(self.client, exc, event.get("session_id"))
            return exc
        return None

    async def _run_emulated(
        self, link: UpstreamLink, cls: Classification, model: str, upstream_model: str
    ) -> None:
        assert self.route is not None
        runner = EmulatedRunner(
            self.state,
            self.session_id,
            self.route,
            cls,
            model,
            upstream_model,
            link.ws,
            link.url,
            link.created,
            self.log,
        )
        runner.bind_upstream(link.created)
        pending = list(self.pending)
        self.pending.clear()
        told = take_opening(runner.shim, link.opening_event, cls.kind == "duplex", pending)
        keep_opened_with(runner.shim, link.opened_with)
        token = secrets.token_urlsafe(32)
        runner.persister.key_id = self.key_id
        try:
            resumable = await runner.persister.create(token)
        except asyncio.CancelledError:  # cut at the drain's timeout (``cut``)
            await abandon(link, cls.kind == "duplex")
            raise
        created = runner.created_event(token if resumable else None)
        runner.start()
        self.runner = runner
        if self.state.draining:
            # Opened as the replica drains: the drain took the sessions alive as it
            # began; this one is handed on like them, or it would outlive the replica.
            await runner.drain()
        self.told(handed=True)
        await runner.attach(Attach(self.client, [created], asyncio.Event()), pending, told)

    def slot(self) -> str | None:
        """The route whose slot this connection holds; none once it is attached to a
        live emulated session (the session holds it) or before it is routed."""
        if self.route is None:
            return None
        for sid in (self.session_id, self.passthrough_sid):
            if sid is not None and sid in self.state.live:
                return None
        return self.route.model

    def yields_slot(self) -> bool:
        return False

    def committing(self) -> None:
        self.settled.clear()

    def told(self, handed: bool = False) -> None:
        self.handed = self.handed or handed
        self.opened = True
        self.settled.set()

    async def drain(self) -> None:
        """Shutdown: close with 1012 so the client resumes elsewhere. A resume or an
        opening that began rotating a token or storing a session ends first (within
        the drain's timeout), telling the client its token; one that has not is
        refused at once (``server_shutting_down``) and, checking ``state.draining``
        before it would begin, stores nothing. One handed to an emulated session is
        closed by that session's drain (an attachment not yet served gets its opening
        first: ``turn_away``)."""
        await self.settled.wait()
        if self.handed:
            return
        if not self.opened:
            self.client.send_error("server_shutting_down", "this replica is draining; reconnect")
        await self.client.close(1012, "service restart")

    def cut(self) -> None:
        """At the drain's timeout: stop a resume or an opening still rotating or
        storing, before its write lands (the client's token still resumes), rather
        than leave it to store a token its closed client never learns."""
        if not self.settled.is_set() and self.task is not None:
            self.task.cancel()
