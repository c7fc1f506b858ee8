"""The configuration's shape: typed, frozen sections whose fields carry their own docs.

Validation is pydantic's (types, bounds, URL schemes); each field's ``description`` is
the one-line text of the README's configuration reference (``proxy/config_reference.py``).
Rules that span several routes live in ``proxy/config_routes.py``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic.dataclasses import dataclass

from proxy.config_store_url import parse_store_url

Mode = Literal["auto", "passthrough", "barge_in_emulated", "duplex_emulated"]
MODES: tuple[str, ...] = get_args(Mode)
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
EMBEDDED_SCHEME = "embedded://"
EMBEDDED_KINDS = ("duplex", "duplex-no-barge-in", "turn")

# Unknown keys are errors (a typo must not silently fall back to a default).
SECTION = ConfigDict(extra="forbid")


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
    max_sessions: int = Field(
        default=1000,
        gt=0,
        description="Sessions this replica holds; /readyz answers 503 when full.",
    )
    handshake_timeout_s: float = Field(
        default=10.0, gt=0, description="A session without session.created by then gets an error."
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
        description="Bytes queued for a slow client before it is dropped (1008).",
    )
    first_event_wait_ms: int = Field(
        default=50,
        ge=0,
        description="Wait for a speak-first client's session.update before opening upstream.",
    )
    pending_client_frames: int = Field(
        default=512, gt=0, description="Client frames held while the upstream session opens."
    )
    drain_timeout_s: float = Field(
        default=10.0,
        ge=0,
        description="On SIGTERM, time allowed to persist and close sessions (1012).",
    )
    log_level: LogLevel = Field(
        default="info", description="debug, info, warning, error or critical."
    )


@dataclass(frozen=True, slots=True, config=SECTION)
class StoreConfig:
    url: str = Field(
        default="memory://",
        description=(
            "memory:// (one replica); shared: redis://, rediss:// (TLS), unix://, "
            "redis+cluster://h:p,h:p, redis+sentinel://h:p,h:p/service/db."
        ),
    )
    cluster: bool = Field(
        default=False, description="The redis:// or rediss:// url names a Redis Cluster node."
    )
    password_file: str = Field(
        default="",
        description="File holding the Redis password (a mounted Secret); never logged.",
    )
    tls_ca_file: str = Field(
        default="", description="CA bundle that signed Redis's certificate (rediss only)."
    )
    tls_cert_file: str = Field(
        default="", description="Client certificate for mutual TLS (rediss only)."
    )
    tls_key_file: str = Field(default="", description="Private key of tls_cert_file (rediss only).")
    disconnect_grace_s: float = Field(
        default=30.0, gt=0, description="How long a dropped session waits to be resumed."
    )
    replay_max_bytes: int = Field(
        default=8 * 1024 * 1024,
        gt=0,
        description="Server events kept per session for replay, in bytes.",
    )
    replay_max_age_s: float = Field(
        default=60.0, gt=0, description="Server events older than this are not replayed."
    )
    timeout_s: float = Field(
        default=0.25, gt=0, description="No request ever blocks on the store longer than this."
    )
    recent_event_ids: int = Field(
        default=256, ge=0, description="Client event_ids remembered per session to drop re-sends."
    )

    @field_validator("url")
    @classmethod
    def _valid_url(cls, url: str) -> str:
        # The messages never quote the password (parse_store_url redacts the url).
        parse_store_url(url)
        return url

    @model_validator(mode="after")
    def _consistent(self) -> StoreConfig:
        parsed = parse_store_url(self.url, self.cluster)
        if self.password_file and parsed.password is not None:
            raise ValueError("a password in store.url and store.password_file: give one")
        if parsed.kind == "memory" and self.password_file:
            raise ValueError("store.password_file needs a Redis url, not memory://")
        tls_files = (self.tls_ca_file, self.tls_cert_file, self.tls_key_file)
        if any(tls_files) and not parsed.tls:
            raise ValueError("store.tls_* files need a TLS url (rediss://, rediss+cluster://...)")
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("store.tls_cert_file and store.tls_key_file go together")
        return self


@dataclass(frozen=True, slots=True, config=SECTION)
class VadConfig:
    """Defaults for server-side turn detection (OpenAI ``server_vad`` defaults)."""

    threshold: float = Field(
        default=0.5, gt=0, lt=1, description="Speech probability that counts as speech (0..1)."
    )
    prefix_padding_ms: int = Field(
        default=300, ge=0, description="Audio kept before detected speech onset."
    )
    silence_duration_ms: int = Field(
        default=500, gt=0, description="Silence that ends a user turn."
    )
    min_speech_ms: int = Field(
        default=96, ge=0, description="Speech shorter than this never starts a turn (clicks)."
    )
    hold_min_speech_ms: int = Field(
        default=64,
        ge=0,
        description="Speech over assistant playback that holds (pauses) its audio.",
    )
    # Long enough that backchannels ("uh-huh", up to ~0.65 s voiced on the dev corpus)
    # resume, short of any sentence (>= 1.8 s): see bench/bargein.py.
    min_barge_in_ms: int = Field(
        default=800, ge=0, description="Voiced overlap that cuts the answer (shorter: it resumes)."
    )
    target_barge_in_latency_ms: int = Field(
        default=300, gt=0, description="Declared in capabilities: speech onset to last cut delta."
    )
    echo_suppression: bool = Field(
        default=True, description="Remove the assistant's own audio from the mic before VAD."
    )
    max_batch: int = Field(
        default=64, ge=1, description="Most 512-sample windows per VAD inference."
    )
    threads: int = Field(default=1, ge=1, description="onnxruntime intra-op threads for the VAD.")


@dataclass(frozen=True, slots=True, config=SECTION)
class WebConfig:
    """The browser page (``GET /``) and its route list (``GET /v1/routes``)."""

    enabled: bool = Field(
        default=True, description="Serve the talk page at GET / and the route list."
    )


@dataclass(frozen=True, slots=True, config=SECTION)
class Route:
    model: str = Field(min_length=1, description="Model name or glob, matched against ?model=.")
    upstream: str = Field(
        min_length=1, description="ws:// or wss:// URL, or embedded://KIND (reference backend)."
    )
    mode: Mode = Field(
        default="auto", description="auto, passthrough, barge_in_emulated or duplex_emulated."
    )
    upstream_model: str | None = Field(
        default=None, min_length=1, description="Model name sent upstream, if different."
    )
    headers: Mapping[str, str] = Field(
        default_factory=dict, description="Headers sent to the upstream (never logged)."
    )
    session_defaults: Mapping[str, Any] = Field(
        default_factory=dict,
        description="Merged into the session.update that opens upstream (e.g. ref_audio).",
    )
    upstream_input_rate_hz: int | None = Field(
        default=None, gt=0, description="Rate the upstream takes; unset: as declared, else 24000."
    )
    upstream_output_rate_hz: int | None = Field(
        default=None,
        gt=0,
        description="Rate the upstream produces; unset: as declared, else 24000.",
    )
    max_sessions: int | None = Field(
        default=None, gt=0, description="Sessions at once on this route; unset: no route limit."
    )
    request_duplex: bool = Field(
        default=True,
        description="Ask for the duplex dialect with ?duplex=1 (falls back if refused).",
    )

    @field_validator("upstream")
    @classmethod
    def _known_upstream(cls, upstream: str) -> str:
        if upstream.startswith(EMBEDDED_SCHEME):
            kind = upstream.removeprefix(EMBEDDED_SCHEME)
            if kind not in EMBEDDED_KINDS:
                raise ValueError(
                    f"embedded upstream must be one of {', '.join(EMBEDDED_KINDS)}, got {kind!r}"
                )
            return upstream
        parts = urlsplit(upstream)
        if parts.scheme not in ("ws", "wss"):
            raise ValueError(
                f"upstream must be ws://, wss:// or {EMBEDDED_SCHEME}KIND, got {upstream!r}"
            )
        try:
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError as exc:
            raise ValueError(f"upstream URL has a bad port: {upstream!r}") from exc
        if not parts.hostname:
            raise ValueError(f"upstream URL names no host: {upstream!r}")
        return upstream

    def matches(self, model: str) -> bool:
        return self.model == model or fnmatch.fnmatchcase(model, self.model)

    @property
    def embedded_kind(self) -> str | None:
        if self.upstream.startswith(EMBEDDED_SCHEME):
            return self.upstream.removeprefix(EMBEDDED_SCHEME)
        return None

    @property
    def is_glob(self) -> bool:
        return any(c in self.model for c in "*?[")


@dataclass(frozen=True, slots=True, config=SECTION)
class Config:
    server: ServerConfig = Field(default_factory=ServerConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    vad: VadConfig = Field(default_factory=VadConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    routes: tuple[Route, ...] = Field(
        default=(), description="[[routes]] entries; exact model names win over globs."
    )
    default_model: str | None = Field(
        default=None, min_length=1, description="Model used when a client names none."
    )

    def route_for(self, model: str) -> Route | None:
        """First route whose pattern matches, exact matches winning over globs."""
        for route in self.routes:
            if route.model == model:
                return route
        for route in self.routes:
            if route.matches(model):
                return route
        return None
