"""aiohttp routes of the duplex kinds: ``OmniDuplexSessionHandler`` on the wire.

Routing (``api_server.py``): ``/v1/realtime`` is the duplex session when
``duplex`` is absent or ``1|true|on``; any other ``duplex`` value falls through
to the turn-based handler, which a duplex server does not have ("Realtime API
is not available", close 1000).  ``/v1/duplex`` is the same session.

Handshake (``serving.py::handle_realtime_session``): ``?model=``
autostarts unless ``autostart`` is off or ``resume`` is on; otherwise the first
text frame (within ``config_timeout_s``) decides: ``session.update`` opens with
its session object, ``session.resume`` resumes, anything else opens a default
session and runs as its first command.  Handshake and resume failures send one
frame; the real handler then just returns, the stand-in closes with 1000. The live
session's frames after it are ``duplex_live.py``'s.
"""

from __future__ import annotations

import json
import weakref

from aiohttp import WSMsgType, web

from proxy.reference.duplex_config import ConfigError, SessionSettings
from proxy.reference.duplex_formats import InputDefaults
from proxy.reference.duplex_live import BINARY_MESSAGE, read_loop, run_event
from proxy.reference.duplex_registry import ResumeRefused, SessionRegistry
from proxy.reference.duplex_session import DuplexSession
from proxy.reference.gate import AudioGate
from proxy.reference.options import FAULT_STARVE_SESSIONS, FAULT_UNBOUNDED_BUFFER, ReferenceOptions
from proxy.reference.outbound import Outbound
from proxy.reference.personaplex_frames import PersonaPlexFrames
from proxy.reference.wire import (
    AUTOSTART_FALSE,
    DUPLEX_TRUE,
    REALTIME_NOT_AVAILABLE,
    RESUME_TRUE,
    dumps,
    duplex_error,
    query_in,
)

#: The ASGI server's frame cap (uvicorn ``ws_max_size``); beyond it the socket closes 1009.
MAX_FRAME_BYTES = 16 * 1024 * 1024


class DuplexBackend:
    def __init__(
        self, kind: str, *, options: ReferenceOptions, reply_ms: int, served_model: str | None
    ) -> None:
        self.kind = kind
        self.options = options
        self.reply_ms = reply_ms
        self.served_model = served_model
        self.registry = SessionRegistry[DuplexSession](
            AudioGate(starve=options.has(FAULT_STARVE_SESSIONS))
        )
        self.sockets: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()
        self.model_inputs: list[PersonaPlexFrames] = []  # kept after their sessions end

    # ---- routes ----

    async def realtime(self, request: web.Request) -> web.StreamResponse:
        duplex = request.query.get("duplex")
        if duplex is None or query_in(duplex, DUPLEX_TRUE, strip=False):
            return await self.session(request)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(dumps(REALTIME_NOT_AVAILABLE))
        await ws.close()
        return ws

    async def session(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_FRAME_BYTES)
        await ws.prepare(request)
        self.sockets.add(ws)
        unbounded = self.options.has(FAULT_UNBOUNDED_BUFFER)
        out = Outbound(
            ws, request.transport, max_bytes=None if unbounded else self.options.max_outbound_bytes
        )
        session: DuplexSession | None = None
        try:
            session = await self._handshake(request, ws, out)
            if session is not None:
                await read_loop(ws, out, session)
        finally:
            if session is not None and session.is_current(out):
                session.detach(out)
            await out.finish()
        return ws

    # ---- handshake ----

    async def _handshake(
        self, request: web.Request, ws: web.WebSocketResponse, out: Outbound
    ) -> DuplexSession | None:
        query = request.query
        model = query.get("model") or None
        resume_only = query_in(query.get("resume"), RESUME_TRUE) or query_in(
            query.get("autostart"), AUTOSTART_FALSE
        )
        defaults = InputDefaults()
        if model is not None and not resume_only:
            return self._open({"model": model}, defaults, out)
        first = await self._first_message(ws, out)
        if first is None:
            return None
        kind = first.get("type")
        if kind == "session.resume":
            return self._resume(first, out)
        if kind == "session.update":
            raw = first.get("session")
            payload = dict(raw) if isinstance(raw, dict) else dict(first)
            payload.pop("type", None)
            defaults.fold(payload)
            return self._open(payload, defaults, out)
        session = self._open({"model": model}, defaults, out)
        if session is not None:
            run_event(session, out, first)
        return session

    async def _first_message(
        self, ws: web.WebSocketResponse, out: Outbound
    ) -> dict[str, object] | None:
        try:
            msg = await ws.receive(timeout=self.options.config_timeout_s)
        except TimeoutError:
            return self._refuse(
                out, duplex_error("config_timeout", "Timeout waiting for session.update")
            )
        if msg.type == WSMsgType.BINARY:
            return self._refuse(out, duplex_error("realtime_input_failed", BINARY_MESSAGE))
        if msg.type != WSMsgType.TEXT:
            return None
        try:
            first = json.loads(msg.data)
        except ValueError:
            return self._refuse(out, duplex_error("invalid_json", "Invalid JSON in session.update"))
        if not isinstance(first, dict):
            return self._refuse(
                out, duplex_error("bad_event", "Realtime event must be a JSON object")
            )
        return first

    @staticmethod
    def _refuse(out: Outbound, payload: dict[str, object]) -> None:
        out.send(payload)
        out.close(1000)

    def _open(
        self, payload: dict[str, object], defaults: InputDefaults, out: Outbound
    ) -> DuplexSession | None:
        limit = self.options.session_limit
        try:
            settings = SessionSettings(
                payload, kind=self.kind, options=self.options, served_model=self.served_model
            )
            if limit is not None and len(self.registry.sessions) >= limit:
                # manager.py counts every session not yet ended, detached ones included.
                message = f"duplex_session_capacity_exhausted: limit={limit}"
                return self._refuse(out, duplex_error("resource_exhausted", message))
            settings.check_model_fields()
        except ConfigError as exc:
            return self._refuse(out, duplex_error(exc.code, str(exc)))
        session = DuplexSession(
            registry=self.registry,
            kind=self.kind,
            options=self.options,
            reply_ms=self.reply_ms,
            settings=settings,
            defaults=defaults,
        )
        self.model_inputs += [session.frames] if session.frames is not None else []
        session.open(out)
        return session

    def _resume(self, event: dict[str, object], out: Outbound) -> DuplexSession | None:
        session_id = event.get("session_id")
        token = event.get("resume_token")
        last = event.get("last_received_server_event_seq", 0)
        if not (
            isinstance(session_id, str)
            and session_id
            and isinstance(token, str)
            and token
            and isinstance(last, int)
            and last >= 0
        ):
            message = (
                "session.resume requires session_id, resume_token, "
                "and a non-negative event sequence"
            )
            return self._refuse(out, duplex_error("invalid_session_resume", message))
        session = self.registry.get(session_id)
        if session is None or session.closed:
            message = f"Unknown or expired duplex session: {session_id}"
            return self._refuse(out, duplex_error("session_resume_expired", message))
        try:
            session.resume(token, last, out)
        except ResumeRefused as refused:
            return self._refuse(out, refused.payload)
        return session

    # ---- lifecycle ----

    async def shutdown(self) -> None:
        for ws in list(self.sockets):
            await ws.close(code=1012, message=b"server shutdown")

    async def cleanup(self) -> None:
        await self.registry.aclose()


def add_duplex_routes(app: web.Application, backend: DuplexBackend) -> None:
    app.router.add_get("/v1/realtime", backend.realtime)
    app.router.add_get("/v1/duplex", backend.session)

    async def on_shutdown(_: web.Application) -> None:
        await backend.shutdown()

    async def on_cleanup(_: web.Application) -> None:
        await backend.cleanup()

    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
