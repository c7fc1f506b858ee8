"""The configuration's shape: typed, frozen sections whose fields carry their own docs.

Validation is pydantic's (types, bounds, URL schemes); each field's ``description`` is
the one-line text of the README's configuration reference (``proxy/config_reference.py``).
A route's own shape is ``proxy/config_route.py``, the VAD's ``proxy/config_vad.py``;
rules that span several routes live in ``proxy/config_routes.py``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic.dataclasses import dataclass

from proxy.config_auth import AuthConfig
from proxy.config_ops import SECTION, DrainConfig, ReadinessConfig, ReloadConfig, WebConfig
from proxy.config_redial import RedialConfig
from proxy.config_route import Route
from proxy.config_store import StoreConfig
from proxy.config_vad import VadConfig

LogLevel = Literal["debug", "info", "warning", "error", "critical"]
EventLoop = Literal["uvloop", "asyncio"]


@dataclass(frozen=True, slots=True, config=SECTION)
class ServerConfig:
    host: str = Field(default="0.0.0.0", min_length=1, description="Address to listen on.")
    port: int = Field(
        default=8080, ge=0, le=65535, description="TCP port to listen on (0: any free)."
    )
    max_frame_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=1024,
        description="Largest client frame accepted; a bigger one closes the socket with 1009.",
    )
    max_json_depth: int = Field(
        default=64,
        ge=8,
        le=250,
        description="Deepest JSON nesting in an event: a client event deeper gets invalid_event,"
        " an upstream event deeper is dropped with a warning.",
    )
    max_json_values: int = Field(
        default=50_000,
        ge=1000,
        description="Most JSON values (keys and list items, all levels) in a client event:"
        " one with more gets invalid_event (a few MB of tiny values parse into tens of MB).",
    )
    max_event_id_chars: int = Field(
        default=512,
        ge=16,
        description="Longest client event_id: an event with a longer one gets invalid_event"
        " (param event_id; a session remembers its client's recent ids).",
    )
    max_instructions_chars: int = Field(
        default=256 * 1024,
        ge=1024,
        description="Longest instructions in a session.update or response.create: longer"
        " gets invalid_value (param session.instructions or response.instructions),"
        " nothing applied.",
    )
    max_tools_bytes: int = Field(
        default=256 * 1024,
        ge=1024,
        description="Largest tools (as compact JSON) in a session.update or response.create:"
        " larger gets invalid_value (param session.tools or response.tools), nothing applied.",
    )
    max_sessions: int = Field(
        default=1000,
        gt=0,
        description="Sessions this replica holds; /readyz answers 503 when full.",
    )
    handshake_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description=(
            "A session without session.created by then gets an error; also how long a "
            "client whose URL says autostart=0 or resume=1 is waited for (vLLM-Omni's "
            "config_timeout)."
        ),
    )
    upstream_connect_timeout_s: float = Field(
        default=5.0, gt=0, description="Timeout for opening the upstream WebSocket."
    )
    classify_timeout_s: float = Field(
        default=5.0, gt=0, description="Wait for the first upstream frame that tells its dialect."
    )
    client_send_queue_frames: int = Field(
        default=2048,
        gt=0,
        description="Frames queued for a slow client before it is dropped (1008).",
    )
    client_send_queue_bytes: int = Field(
        default=8 * 1024 * 1024,
        gt=0,
        description="Bytes queued for a slow client before it is dropped (1008); a frame"
        " queued when none waits is always taken, however big (one upstream event may be).",
    )
    first_event_wait_ms: int = Field(
        default=50,
        ge=0,
        description=(
            "Wait for a speak-first client's session.update before opening upstream "
            "(one whose URL says autostart=0 or resume=1: up to handshake_timeout_s)."
        ),
    )
    pending_client_frames: int = Field(
        default=512, gt=0, description="Client frames held while the upstream session opens."
    )
    pending_client_bytes: int = Field(
        default=16 * 1024 * 1024,
        gt=0,
        description=(
            "Bytes of client frames held unhandled, while the upstream session opens and"
            " again on a session's queue; past them the client is not read (its socket"
            " pushes back). One frame always fits."
        ),
    )
    drain_timeout_s: float = Field(
        default=10.0,
        ge=0,
        description="On SIGTERM, time allowed to persist and close sessions (1012).",
    )
    log_level: LogLevel = Field(
        default="info", description="debug, info, warning, error or critical."
    )
    event_loop: EventLoop = Field(
        default="uvloop",
        description="uvloop, or asyncio (the standard library's loop): what the server"
        " runs on. uvloop added less latency in most runs, at about the same CPU"
        " (docs/benchmarks.md, Performance).",
    )
    http_handshake_timeout_s: float = Field(
        default=15.0,
        gt=0,
        description="A connection that sends no complete HTTP request by then is closed.",
    )
    input_realtime_factor: float = Field(
        default=1.5,
        gt=0,
        description="Client audio allowed per second of wall time, in seconds of audio.",
    )
    input_burst_s: float = Field(
        default=20.0,
        gt=0,
        description=(
            "Client audio allowed ahead of that rate, in seconds; one append carrying more "
            "is refused (input_audio_too_long)."
        ),
    )
    input_rate_grace_s: float = Field(
        default=5.0,
        gt=0,
        description="A client over its audio rate this long is closed (1008); slowed till then.",
    )
    session_queue_frames: int = Field(
        default=64, gt=0, description="Client frames queued in a session before reading stops."
    )
    upstream_queue_bytes: int = Field(
        default=16 * 1024 * 1024,
        gt=0,
        description="Bytes of upstream events queued in an emulated session unhandled; past"
        " them the upstream is not read (its socket pushes back). One event always fits.",
    )
    upstream_heartbeat_s: float = Field(
        default=15.0,
        gt=0,
        description="Ping an upstream socket that sent nothing since the last look, one look"
        " this often; nothing back (its pong, a frame) in half of it: lost.",
    )
    upstream_send_timeout_s: float = Field(
        default=10.0, gt=0, description="An upstream that takes no frame for this long is lost."
    )
    client_heartbeat_s: float = Field(
        default=30.0,
        ge=0,
        description="Ping a client socket that sent nothing since the last look, one look"
        " this often; nothing back (its pong, a frame) in half of it: it is gone (a half-open"
        " connection), and its session waits for a resume. 0: never.",
    )
    idle_timeout_s: float = Field(
        default=600.0, gt=0, description="A session whose client sends nothing this long ends."
    )
    idle_warning_s: float = Field(
        default=30.0,
        ge=0,
        description="Seconds before the idle close that session_idle_timeout warns the client.",
    )
    max_session_s: float = Field(
        default=4 * 3600.0, gt=0, description="Longest a session lasts, resumes included."
    )


@dataclass(frozen=True, slots=True, config=SECTION)
class Config:
    server: ServerConfig = Field(default_factory=ServerConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    vad: VadConfig = Field(default_factory=VadConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    drain: DrainConfig = Field(default_factory=DrainConfig)
    readiness: ReadinessConfig = Field(default_factory=ReadinessConfig)
    reload: ReloadConfig = Field(default_factory=ReloadConfig)
    redial: RedialConfig = Field(default_factory=RedialConfig)
    auth: AuthConfig = Field(default_factory=AuthConfig)
    routes: tuple[Route, ...] = Field(
        default=(), description="[[routes]] entries; exact model names win over globs."
    )
    default_model: str | None = Field(
        default=None, min_length=1, description="Model used when a client names none."
    )

    @model_validator(mode="after")
    def _held_fits_client_queue(self) -> Config:
        # Past the cap every held event is queued for the client at once
        # (proxy/emulated/held_ends.py): the cap must leave the queue room for them on
        # top of what it may hold already, or the release itself drops the client (1008).
        server, store = self.server, self.store
        if store.held_max_frames > server.client_send_queue_frames // 2:
            raise ValueError(
                "store.held_max_frames must be at most half of server.client_send_queue_frames"
            )
        if store.held_max_bytes > server.client_send_queue_bytes // 2:
            raise ValueError(
                "store.held_max_bytes must be at most half of server.client_send_queue_bytes"
            )
        return self

    @property
    def web_enabled(self) -> bool:
        """The page is on where set; unset, only when clients need no credentials."""
        if self.web.enabled is not None:
            return self.web.enabled
        return self.auth.mode in (None, "none")

    def route_for(self, model: str) -> Route | None:
        """First route whose pattern matches, exact matches winning over globs."""
        for route in self.routes:
            if route.model == model:
                return route
        for route in self.routes:
            if route.matches(model):
                return route
        return None
