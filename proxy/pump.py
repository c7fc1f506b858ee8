"""One client connection: route it, open the upstream, classify, run the mode.

Handshake (DESIGN §4, "both kinds of client"): the proxy dials the upstream at
once. A client that speaks first (vLLM-Omni's ``DuplexClient``) usually has its
``session.update`` in by then; it is folded into the upstream's opening update so
open-only fields such as ``ref_audio`` are honoured. A GA client that waits gets
``session.created`` as soon as the upstream session is open. Every client event that
arrives meanwhile is queued (bounded) and applied in order afterwards.
"""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from typing import Any

import orjson
from aiohttp import web

from proxy.client_io import CLOSED, ClientChannel, ClientFrame
from proxy.config import Route
from proxy.logging import get_logger
from proxy.passthrough.relay import run_passthrough
from proxy.resume.request import ResumeFailed, parse_resume, resume_from_query
from proxy.resume.takeover import resume
from proxy.state import ProxyState
from proxy.upstream import UpstreamLink, UpstreamRefused, UpstreamUnavailable, dial, opening_update
from shim.capabilities import Classification, classify
from shim.wire import error_code


def _model_from(event: dict[str, Any]) -> str | None:
    session = event.get("session")
    for source in (session if isinstance(session, dict) else {}, event):
        model = source.get("model")
        if isinstance(model, str) and model:
            return model
    return None


def _without_turn_detection(session: dict[str, Any] | None) -> dict[str, Any] | None:
    """``session`` minus its turn detection, or None if it had none to remove."""
    if not session:
        return None
    found = "turn_detection" in session
    trimmed = {k: v for k, v in session.items() if k != "turn_detection"}
    audio = trimmed.get("audio")
    if isinstance(audio, dict) and isinstance(audio.get("input"), dict):
        if "turn_detection" in audio["input"]:
            found = True
            audio_input = {k: v for k, v in audio["input"].items() if k != "turn_detection"}
            trimmed["audio"] = {**audio, "input": audio_input}
    return trimmed if found else None


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
        )
        self.session_id = "sess_" + uuid.uuid4().hex
        self.log = get_logger(session_id=self.session_id, replica_id=state.replica_id)
        self.mode: str | None = None
        self.route: Route | None = None
        self.pending: list[ClientFrame] = []
        self.runner: Any = None
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
            self.client.send_error("internal_error", "the proxy failed this session")
            await self.client.close(1011, "internal error")
        finally:
            if self.route is not None:
                self.state.per_route[self.route.model] -= 1
            if self.mode is not None:
                self.state.metrics.sessions_active.labels(self.mode).dec()
            await self.client.stop()
            self.log.info("session_closed", mode=self.mode, close_code=self.client.close_code)

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
        limit = route.max_sessions
        if limit is not None and state.per_route.get(route.model, 0) >= limit:
            self.client.send_error(
                "session_limit_reached", f"route {route.model!r} is at its session limit"
            )
            await self.client.close(1013, "try again later")
            return
        self.route = route
        state.per_route[route.model] = state.per_route.get(route.model, 0) + 1
        self.log = self.log.bind(model=model, route=route.model)
        upstream_model = route.upstream_model or model
        link = await self._open_upstream(route, upstream_model, first)
        if link is None:
            return
        cls = classify(link.created, forced=route.mode, duplex_refused=link.duplex_refused)
        self.mode = cls.mode
        state.metrics.sessions_total.labels(cls.mode).inc()
        state.metrics.sessions_active.labels(cls.mode).inc()
        self.log = self.log.bind(mode=cls.mode)
        self.log.info("session_open", upstream_kind=cls.kind, reasons=list(cls.reasons))
        if cls.mode == "passthrough":
            await run_passthrough(self, link, cls)
            return
        await self._run_emulated(link, cls, model, upstream_model)

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
        from proxy.emulated.queue_items import Attach
        from proxy.emulated.runner import EmulatedRunner

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
        if link.opening_event is not None and cls.kind == "duplex":
            # It already opened the upstream session; apply it locally, don't resend.
            runner.shim.apply_update(link.opening_event.event)
            pending.remove(link.opening_event)
        token = secrets.token_urlsafe(32)
        resumable = await runner.persister.create(token)
        created = runner.created_event(token if resumable else None)
        runner.start()
        self.runner = runner
        await runner.attach(Attach(self.client, [created], asyncio.Event()), pending)

    async def _open_upstream(
        self, route: Route, upstream_model: str, first: ClientFrame | None
    ) -> UpstreamLink | None:
        cfg = self.state.config.server
        assert self.state.http is not None
        # A speak-first client's session.update opens the upstream session itself.
        client_session: dict[str, Any] | None = None
        if first is not None and first.event.get("type") == "session.update":
            session = first.event.get("session")
            client_session = (
                dict(session)
                if isinstance(session, dict)
                else {k: v for k, v in first.event.items() if k not in ("type", "event_id")}
            )
            if client_session.get("type") == "realtime":
                del client_session["type"]  # GA session type, not an upstream field
        url = self.state.upstream_url(route)

        async def open_with(session: dict[str, Any] | None) -> UpstreamLink:
            assert self.state.http is not None
            return await dial(
                self.state.http,
                url,
                route,
                opening_update(route, upstream_model, session),
                cfg.upstream_connect_timeout_s,
                cfg.classify_timeout_s,
            )

        try:
            try:
                link = await open_with(client_session)
            except UpstreamRefused:
                # A duplex model without barge-in may refuse server VAD in its opening
                # config; turn detection is then the proxy's job: open without it.
                trimmed = _without_turn_detection(client_session)
                if trimmed is None:
                    raise
                link = await open_with(trimmed)
        except UpstreamRefused as exc:
            self.state.metrics.upstream_errors.labels("refused").inc()
            err = exc.event.get("error")
            message = err.get("message") if isinstance(err, dict) else err
            code = error_code(exc.event)
            self.log.warning("upstream_refused_session", code=code, message=message)
            self.client.send_error(
                "upstream_refused", f"upstream refused the session: {code}: {message}"
            )
            await self.client.close(1011, "upstream refused session")
            return None
        except UpstreamUnavailable as exc:
            self.state.metrics.upstream_errors.labels("connect").inc()
            self.log.warning("upstream_unavailable", error=str(exc))
            self.client.send_error("upstream_unavailable", str(exc))
            await self.client.close(1011, "upstream unavailable")
            return None
        link.opening_event = first if client_session is not None else None
        return link

    async def drain(self) -> None:
        """Shutdown: close with 1012 so the client resumes elsewhere (runners persist)."""
        await self.client.close(1012, "service restart")


async def handle_client(request: web.Request, state: ProxyState) -> web.WebSocketResponse:
    cfg = state.config.server
    ws = web.WebSocketResponse(
        max_msg_size=cfg.max_frame_bytes, autoping=True, heartbeat=None, compress=False
    )
    await ws.prepare(request)
    session = ClientSession(ws, request, state)
    if state.draining or len(state.sessions) >= cfg.max_sessions:
        await ws.send_str(
            orjson.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "rate_limit_error",
                        "code": "server_at_capacity"
                        if not state.draining
                        else "server_shutting_down",
                        "message": "this replica cannot take another session now",
                        "event_id": None,
                        "param": None,
                    },
                }
            ).decode()
        )
        await ws.close(code=1013 if not state.draining else 1012, message=b"unavailable")
        return ws
    state.sessions.add(session)
    try:
        await session.run()
    finally:
        state.sessions.discard(session)
    return ws
