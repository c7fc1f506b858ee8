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
from proxy.client_io import CLOSED, ClientChannel
from proxy.config import Route
from proxy.emulated.queue_items import Attach
from proxy.emulated.runner import EmulatedRunner
from proxy.handshake.open_upstream import open_upstream
from proxy.logging import get_logger
from proxy.passthrough.relay import run_passthrough
from proxy.resume.request import ResumeFailed, parse_resume, resume_from_query
from proxy.resume.takeover import resume
from proxy.state import ProxyState
from proxy.upstream import UpstreamLink
from shim.capabilities import Classification, ClientKind, classify
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.dialects.turn_refusals import Refusals
from shim.native_formats import PROXY_CANNOT_SERVE, as_the_proxy_reads


def client_kind(request: web.Request) -> ClientKind:
    """``native`` for vLLM-Omni's duplex protocol (``?duplex=1`` or ``/v1/duplex``),
    else ``ga``: an OpenAI GA realtime client (``docs/protocol.md``)."""
    if request.query.get("duplex") == "1" or request.path.rstrip("/").endswith("/duplex"):
        return "native"
    return "ga"


def _model_from(event: dict[str, Any]) -> str | None:
    session = event.get("session")
    for source in (session if isinstance(session, dict) else {}, event):
        model = source.get("model")
        if isinstance(model, str) and model:
            return model
    return None


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

    # ------------------------------------------------------------------ run
    async def run(self) -> None:
        self.client.start()
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception:
            self.log.exception("session_failed")
            # What the client is owed (a held response end) goes before the error.
            error = ("internal_error", "the proxy failed this session")
            await self.client.end(None, 1011, "internal error", *error)
        finally:
            if self.mode == "passthrough":  # an emulated session is counted by its runner
                self.state.metrics.sessions_active.labels(self.mode, *self._labels()).dec()
            await self.client.stop()
            self.log.info("session_closed", mode=self.mode, close_code=self.client.close_code)

    def _labels(self) -> tuple[str, str]:
        """The route and model labels: from the config, never what the client asked."""
        route = self.route
        assert route is not None
        return route.model, route.upstream_model or route.model

    async def _next_client_frame(self, within_s: float) -> ClientFrame | None:
        """The next client frame within ``within_s``; None on timeout or disconnect."""
        try:
            item = await asyncio.wait_for(self.client.inbox.get(), within_s)
        except TimeoutError:
            return None
        if item is CLOSED:
            await self.client.inbox.put(CLOSED)  # keep the sentinel for later readers
            return None
        assert isinstance(item, ClientFrame)
        self.pending.append(item)
        return item

    async def _run(self) -> None:
        state, cfg = self.state, self.state.config
        query = self.request.query
        model = query.get("model") or None
        # A speak-first client's first event arrives right away; a GA client waits for
        # session.created, so it only costs first_event_wait_ms. Without a model in
        # the URL the first event must name one.
        wait = cfg.server.first_event_wait_ms / 1000 if model else cfg.server.handshake_timeout_s
        from_query = resume_from_query(query)
        first = None if from_query else await self._next_client_frame(wait)
        if from_query or (first is not None and first.event.get("type") == "session.resume"):
            event, raw = from_query if from_query else (first.event, first.raw)  # type: ignore[union-attr]
            sid = event.get("session_id")
            self.passthrough_sid = sid if isinstance(sid, str) else None
            if first is not None:
                self.pending.remove(first)
                first = None
            if await self._try_resume(event, raw):
                return
            if model is None:
                await self.client.close(1008, "resume failed")
                return
        if first is not None and model is None:
            model = _model_from(first.event)
        model = model or cfg.default_model
        if state.draining:
            self.client.send_error("server_shutting_down", "this replica is draining; reconnect")
            await self.client.close(1012, "draining")
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
        if await self._refused_opening(link, cls):
            return
        await self._run_emulated(link, cls, model, upstream_model)

    async def _refused_opening(self, link: UpstreamLink, cls: Classification) -> bool:
        """A native client's opening that vLLM-Omni refuses (a format it does not know,
        turn detection it cannot run), where the proxy answers for a turn-based upstream:
        refused as vLLM-Omni refuses an opening (``invalid_session_config``, in its
        words), and nothing opens (``entrypoints/duplex/serving.py``, ``_open``)."""
        opening = link.opening_event
        if opening is None or cls.kind != "turn" or cls.ga_client:
            return False
        refused = Refusals(native_client=True).session_update(opening.event)
        if refused is None or refused[0] == PROXY_CANNOT_SERVE:
            return False
        await link.ws.close()
        self.client.send_error("invalid_session_config", refused[1])
        await self.client.close(1000, "session refused")
        return True

    async def _try_resume(self, event: dict[str, Any], raw: str) -> bool:
        """Resume; on failure tell the client why (it may start fresh) and return False."""
        try:
            await resume(self, parse_resume(event, raw))
        except ResumeFailed as exc:
            self.log.info("resume_failed", code=exc.code)
            self.client.send_error(exc.code, str(exc))
            return False
        return True

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
        opening = link.opening_event
        if opening is not None and cls.kind == "duplex":
            # It already opened the upstream session; apply it locally, don't resend
            # (a native client's as vLLM-Omni reads it: shim/native_formats.py).
            native = runner.shim.config.native
            runner.shim.apply_update(as_the_proxy_reads(opening.event) if native else opening.event)
            pending.remove(opening)
        elif opening is not None and isinstance(runner.shim, TurnBasedSession):
            # A native client's session.created holds its opening, as vLLM-Omni's does.
            held = runner.shim.refusals.opening(opening.event)
            if held is not None:
                runner.shim.apply_update(held)
        relay = runner.shim
        if isinstance(relay, BargeInRelaySession) and relay.native_client and link.opened_with:
            # What the upstream opened with for this client (its opening over the
            # route's defaults) is what a fresh one is given after a loss or a move.
            relay.opened_with(link.opened_with)
        token = secrets.token_urlsafe(32)
        runner.persister.key_id = self.key_id
        resumable = await runner.persister.create(token)
        created = runner.created_event(token if resumable else None)
        runner.start()
        self.runner = runner
        if self.state.draining:
            # Opened as the replica drains: the drain took the sessions alive as it
            # began; this one is handed on like them, or it would outlive the replica.
            await runner.drain()
        await runner.attach(Attach(self.client, [created], asyncio.Event()), pending)

    def slot(self) -> str | None:
        """The route whose slot this connection holds; none once it is attached to a
        live emulated session (the session holds it) or before it is routed."""
        if self.route is None:
            return None
        for sid in (self.session_id, self.passthrough_sid):
            if sid is not None and sid in self.state.live:
                return None
        return self.route.model

    async def drain(self) -> None:
        """Shutdown: close with 1012 so the client resumes elsewhere (runners persist)."""
        await self.client.close(1012, "service restart")
