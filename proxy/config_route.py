"""One ``[[routes]]`` entry: which model names go to which upstream, and how.

Part of the configuration's shape (``proxy/config_model.py``); rules that span
several routes live in ``proxy/config_routes.py``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic.dataclasses import dataclass

from proxy.config_ops import SECTION

Mode = Literal["auto", "passthrough", "barge_in_emulated", "duplex_emulated"]
MODES: tuple[str, ...] = get_args(Mode)
EMBEDDED_SCHEME = "embedded://"
EMBEDDED_KINDS = ("duplex", "duplex-no-barge-in", "turn")


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
        description="Merged into the session.update that opens upstream (e.g. ref_audio);"
        " the client's keys win, extra_body's key by key.",
    )
    upstream_input_rate_hz: int | None = Field(
        default=None, gt=0, description="Rate the upstream takes; unset: as declared, else 24000."
    )
    upstream_output_rate_hz: int | None = Field(
        default=None,
        gt=0,
        description="Rate the upstream produces; unset: as declared, else 24000.",
    )
    ga_passthrough: bool = Field(
        default=False,
        description="Relay GA clients (no ?duplex=1) byte for byte to a duplex upstream that"
        " can barge in, instead of barge_in_emulated. Warning: a vLLM-Omni duplex upstream"
        " owns playback by playback.ack, which GA clients never send, so such a session"
        " stalls after its first answer (docs/fidelity.md, row 1).",
    )
    max_sessions: int | None = Field(
        default=None, gt=0, description="Sessions at once on this route; unset: no route limit."
    )
    upstream_capacity: int | None = Field(
        default=None,
        ge=0,
        description="Sessions at once on the route's upstream (all routes to its host:port); unset:"
        " 1 for duplex without supports_multi_session, else none; 0: none (docs/protocol.md).",
    )
    warmup_wait_s: float = Field(
        default=180.0,
        ge=0,
        le=240,  # the upgrade request itself is cut at 300 s (aiohttp's total timeout)
        description="Longest wait for an upstream holding the upgrade to warm up.",
    )
    upstream_max_frame_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=64 * 1024,
        description="Largest upstream frame read, whole (a duplex session.created echoes the"
        " client's ref_audio); a bigger one loses the upstream socket (1009) and the session"
        " reaches the upstream again.",
    )
    request_duplex: bool = Field(
        default=True,
        description="Ask for the duplex dialect with ?duplex=1 (falls back if refused).",
    )
    health_path: str | None = Field(
        default=None,
        pattern=r"^/",
        description="HTTP path on the upstream's host answering 200 when it serves (e.g."
        " /health); unset: a TCP connect is the readiness check.",
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
