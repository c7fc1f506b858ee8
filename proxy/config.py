"""Configuration: a TOML file, overridable key by key from the environment.

Every key can be set as ``DUPLEX_PROXY__SECTION__KEY=value`` (value parsed as a TOML
literal when it is one, else taken as a string). Array-of-table entries are addressed
by index: ``DUPLEX_PROXY__ROUTES__0__UPSTREAM=ws://...``.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast, get_args

ENV_PREFIX = "DUPLEX_PROXY__"

Mode = Literal["auto", "passthrough", "barge_in_emulated", "duplex_emulated"]
MODES: tuple[str, ...] = get_args(Mode)
EMBEDDED_SCHEME = "embedded://"
EMBEDDED_KINDS = ("duplex", "duplex-no-barge-in", "turn")


class ConfigError(ValueError):
    """The configuration is invalid; the message says which key and why."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = "0.0.0.0"
    port: int = 8080
    # Largest client frame accepted; a bigger one closes the socket with 1009.
    max_frame_bytes: int = 4 * 1024 * 1024
    max_sessions: int = 1000
    # A session that has not produced session.created by then gets an error.
    handshake_timeout_s: float = 10.0
    upstream_connect_timeout_s: float = 5.0
    # How long to wait for the first upstream frame when classifying it.
    classify_timeout_s: float = 5.0
    # Frames and bytes queued for a slow client before it is dropped (close 1008).
    client_send_queue_frames: int = 2048
    client_send_queue_bytes: int = 8 * 1024 * 1024
    # How long to wait for a speak-first client's session.update before opening the
    # upstream session with the route's defaults alone.
    first_event_wait_ms: int = 50
    # Client frames held while the upstream session is being opened.
    pending_client_frames: int = 512
    drain_timeout_s: float = 10.0
    log_level: str = "info"


@dataclass(frozen=True, slots=True)
class StoreConfig:
    url: str = "memory://"
    disconnect_grace_s: float = 30.0
    replay_max_bytes: int = 8 * 1024 * 1024
    replay_max_age_s: float = 60.0
    # No request ever blocks on the store for longer than this.
    timeout_s: float = 0.25
    recent_event_ids: int = 256


@dataclass(frozen=True, slots=True)
class VadConfig:
    """Defaults for server-side turn detection (OpenAI ``server_vad`` defaults)."""

    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    # Speech shorter than this never starts a turn (clicks); vLLM-Omni's default.
    min_speech_ms: int = 96
    # Speech needed to hold (pause) assistant audio while it plays; see min_barge_in_ms.
    hold_min_speech_ms: int = 64
    # Voiced speech over assistant playback needed before a barge-in cuts it. The
    # audio is held (not dropped) from the first speech window, so this only decides
    # cut vs resume: long enough that backchannels ("uh-huh", "okay", "mm-hmm", up to
    # ~0.65 s voiced on the dev corpus) resume, short of any sentence (>= 1.8 s).
    min_barge_in_ms: int = 800
    # Declared in emulated sessions' capabilities: speech onset to the last audio
    # delta of the cut response (bench/bargein.py measures it).
    target_barge_in_latency_ms: int = 300
    # Remove the assistant's own audio (known to the proxy) from the mic before VAD,
    # for clients without echo cancellation.
    echo_suppression: bool = True
    # Largest batch of 512-sample windows per inference call.
    max_batch: int = 64
    threads: int = 1


@dataclass(frozen=True, slots=True)
class Route:
    model: str
    upstream: str
    mode: Mode = "auto"
    # Model name sent upstream when it differs from the one the client asked for.
    upstream_model: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Sent in the session.update that opens the upstream session (e.g. ref_audio).
    session_defaults: Mapping[str, Any] = field(default_factory=dict)
    # Rates the upstream takes and produces; None means "as it declares, else 24 kHz".
    upstream_input_rate_hz: int | None = None
    upstream_output_rate_hz: int | None = None
    max_sessions: int | None = None
    # Ask for the duplex dialect with ?duplex=1 (falls back when refused).
    request_duplex: bool = True

    def matches(self, model: str) -> bool:
        return self.model == model or fnmatch.fnmatchcase(model, self.model)

    @property
    def embedded_kind(self) -> str | None:
        if self.upstream.startswith(EMBEDDED_SCHEME):
            return self.upstream.removeprefix(EMBEDDED_SCHEME)
        return None


@dataclass(frozen=True, slots=True)
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    vad: VadConfig = field(default_factory=VadConfig)
    routes: tuple[Route, ...] = ()
    # Used when a client names no model (query or first session.update).
    default_model: str | None = None

    def route_for(self, model: str) -> Route | None:
        """First route whose pattern matches, exact matches winning over globs."""
        for route in self.routes:
            if route.model == model:
                return route
        for route in self.routes:
            if route.matches(model):
                return route
        return None


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def apply_env(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """Overlay ``DUPLEX_PROXY__A__B=v`` variables onto the parsed TOML tree."""
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(ENV_PREFIX) :].split("__") if p]
        if not path:
            continue
        node: Any = data
        for i, part in enumerate(path[:-1]):
            nxt = path[i + 1]
            if isinstance(node, list):
                idx = _index(part, name)
                while len(node) <= idx:
                    node.append({})
                node = node[idx]
                continue
            if part not in node:
                node[part] = [] if nxt.isdigit() else {}
            node = node[part]
        leaf = path[-1]
        if isinstance(node, list):
            idx = _index(leaf, name)
            while len(node) <= idx:
                node.append(None)
            node[idx] = _parse_env_value(raw)
        else:
            node[leaf] = _parse_env_value(raw)
    return data


def _index(part: str, name: str) -> int:
    if not part.isdigit():
        raise ConfigError(f"{name}: expected a numeric index, got {part!r}")
    return int(part)


def _build(cls: type[Any], raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(f"[{where}] must be a table")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise ConfigError(f"[{where}] unknown keys: {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        kind = known[key].type
        expected = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
        kwargs[key] = _coerce(value, expected, f"{where}.{key}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"[{where}] {exc}") from None


def _coerce(value: Any, expected: str, where: str) -> Any:
    base = expected.split("|")[0].strip()
    if value is None:
        if "None" in expected:
            return None
        raise ConfigError(f"{where}: must not be empty")
    if base == "float" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if base == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if base == "bool" and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if base in ("str", "Mode") and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    if base.startswith("Mapping") and not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table, got {value!r}")
    return value


def _build_route(raw: Any, index: int) -> Route:
    where = f"routes.{index}"
    if not isinstance(raw, dict):
        raise ConfigError(f"[{where}] must be a table")
    for key in ("model", "upstream"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ConfigError(f"[{where}] needs a non-empty string {key!r}")
    route = cast(Route, _build(Route, raw, where))
    if route.mode not in MODES:
        raise ConfigError(f"[{where}] mode must be one of {', '.join(MODES)}")
    kind = route.embedded_kind
    if kind is not None and kind not in EMBEDDED_KINDS:
        raise ConfigError(f"[{where}] embedded upstream must be one of {EMBEDDED_KINDS}")
    if kind is None and not route.upstream.startswith(("ws://", "wss://")):
        raise ConfigError(f"[{where}] upstream must be ws://, wss:// or {EMBEDDED_SCHEME}KIND")
    for key in ("upstream_input_rate_hz", "upstream_output_rate_hz", "max_sessions"):
        value = getattr(route, key)
        if value is not None and value <= 0:
            raise ConfigError(f"[{where}] {key} must be positive")
    return route


def config_from_dict(data: Mapping[str, Any]) -> Config:
    allowed = {"server", "store", "vad", "routes", "default_model"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"unknown top-level keys: {', '.join(unknown)}")
    routes_raw = data.get("routes", [])
    if not isinstance(routes_raw, list):
        raise ConfigError("routes must be an array of tables ([[routes]])")
    default_model = data.get("default_model")
    if default_model is not None and not isinstance(default_model, str):
        raise ConfigError("default_model must be a string")
    cfg = Config(
        server=_build(ServerConfig, data.get("server", {}), "server"),
        store=_build(StoreConfig, data.get("store", {}), "store"),
        vad=_build(VadConfig, data.get("vad", {}), "vad"),
        routes=tuple(_build_route(r, i) for i, r in enumerate(routes_raw)),
        default_model=default_model,
    )
    _validate(cfg)
    return cfg


def _validate(cfg: Config) -> None:
    if not 0 <= cfg.server.port <= 65535:
        raise ConfigError("server.port must be 0..65535")
    if cfg.server.max_frame_bytes < 1024:
        raise ConfigError("server.max_frame_bytes must be at least 1024")
    if not 0.0 < cfg.vad.threshold < 1.0:
        raise ConfigError("vad.threshold must be between 0 and 1")
    if not cfg.store.url.startswith(("memory://", "redis://", "rediss://", "unix://")):
        raise ConfigError("store.url must be memory://, redis://, rediss:// or unix://")
    for name in ("disconnect_grace_s", "replay_max_age_s", "timeout_s"):
        if getattr(cfg.store, name) <= 0:
            raise ConfigError(f"store.{name} must be positive")


def load_config(path: str | Path | None, environ: Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (missing default file = built-in defaults) and apply env overrides."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {p}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: {exc}") from None
    return config_from_dict(apply_env(data, os.environ if environ is None else environ))
