"""The ``[auth]`` section: who may open a session, on which routes, and how often.

Keys are configured only as SHA-256 digests (``duplex-proxy hash-key``), so a config
file or an environment dump hands out no key. ``auth_problems`` is the rule that no
deployment is open by accident: a route to a real upstream needs ``mode`` chosen.
How each mode is checked: ``proxy/auth/``; the threat model: README "Security".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic.dataclasses import dataclass

from proxy.config_errors import Problem

AuthMode = Literal["api_key", "jwt", "none"]
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
# HS256 below 32 bytes is brute-forceable (RFC 7518 section 3.2 asks for >= 256 bits).
MIN_HS256_SECRET = 32
NO_MODE = (
    "routes reach a real upstream ({routes}) but [auth] mode is not set, so anyone who "
    'reaches the port would spend its credentials: set mode = "api_key" (keys from '
    '`duplex-proxy hash-key`), "jwt" (jwt_hs256_secret or jwt_rs256_public_key) or '
    '"none" (open on purpose), in [auth] or as DUPLEX_PROXY__AUTH__MODE'
)

SECTION = ConfigDict(extra="forbid")


def _digest(value: str) -> str:
    if not _DIGEST.match(value):
        raise ValueError("expected a SHA-256 hex digest (64 lowercase hex digits)")
    return value


@dataclass(frozen=True, slots=True, config=SECTION)
class ApiKey:
    id: str = Field(min_length=1, description="The key's name in logs and sessions.")
    sha256: str = Field(description="SHA-256 hex digest of the key (`duplex-proxy hash-key`).")
    routes: tuple[str, ...] = Field(
        default=("*",), description="Model names or globs this key may open."
    )
    max_sessions: int | None = Field(
        default=None, gt=0, description="Sessions open at once with this key; unset: no limit."
    )
    sessions_per_minute: int | None = Field(
        default=None, gt=0, description="Connections per minute with this key; unset: no limit."
    )

    @field_validator("sha256")
    @classmethod
    def _check_digest(cls, value: str) -> str:
        return _digest(value)


@dataclass(frozen=True, slots=True, config=SECTION)
class AuthConfig:
    """Client authentication (README "Security")."""

    mode: AuthMode | None = Field(
        default=None,
        description="api_key, jwt or none; unset is refused when a route has a real upstream.",
    )
    keys: tuple[ApiKey, ...] = Field(
        default=(),
        description="API keys: {id, sha256, routes, max_sessions, sessions_per_minute}.",
    )
    jwt_hs256_secret: str | None = Field(
        default=None,
        min_length=MIN_HS256_SECRET,
        description="Shared secret for HS256 tokens (at least 32 bytes).",
    )
    jwt_rs256_public_key: str | None = Field(
        default=None, description="PEM public key for RS256 tokens."
    )
    jwt_audience: str | None = Field(
        default=None, min_length=1, description="Required aud claim of tokens; unset: not checked."
    )
    jwt_issuer: str | None = Field(
        default=None, min_length=1, description="Required iss claim of tokens; unset: not checked."
    )
    jwt_max_sessions: int | None = Field(
        default=None, gt=0, description="Sessions open at once per token subject (sub)."
    )
    jwt_sessions_per_minute: int | None = Field(
        default=None, gt=0, description="Connections per minute per token subject (sub)."
    )
    allowed_origins: tuple[str, ...] = Field(
        default=(),
        description="Browser origins allowed to connect; empty: same-origin pages only.",
    )
    metrics_token_sha256: str | None = Field(
        default=None, description="SHA-256 of the bearer token GET /metrics requires; unset: open."
    )

    @field_validator("metrics_token_sha256")
    @classmethod
    def _metrics_digest(cls, value: str | None) -> str | None:
        return None if value is None else _digest(value)

    @field_validator("jwt_rs256_public_key")
    @classmethod
    def _pem(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        try:
            load_pem_public_key(value.encode())
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a PEM public key: {exc}") from None
        return value

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for origin in value:
            if not re.match(r"^https?://[^/\s]+$", origin):
                raise ValueError(f"an origin is scheme://host[:port], got {origin!r}")
        return tuple(o.lower() for o in value)

    @model_validator(mode="after")
    def _complete(self) -> AuthConfig:
        if self.mode == "api_key" and not self.keys:
            raise ValueError('mode "api_key" needs at least one entry in keys')
        if self.mode == "jwt" and not (self.jwt_hs256_secret or self.jwt_rs256_public_key):
            raise ValueError('mode "jwt" needs jwt_hs256_secret or jwt_rs256_public_key')
        ids = [k.id for k in self.keys]
        if len(set(ids)) != len(ids):
            raise ValueError(f"key ids must be unique, got {ids}")
        return self


def auth_problems(data: Mapping[str, Any]) -> list[Problem]:
    """No [auth] mode while a route dials a real upstream: refused, with how to choose."""
    auth = data.get("auth")
    if isinstance(auth, Mapping) and auth.get("mode") is not None:
        return []
    raw = data.get("routes") or []
    real = [
        f"routes.{i}"
        for i, r in enumerate(raw if isinstance(raw, list | tuple) else [])
        if isinstance(r, Mapping)
        and isinstance(r.get("upstream"), str)
        and not r["upstream"].startswith("embedded://")
    ]
    if not real:
        return []
    return [Problem(("auth", "mode"), NO_MODE.format(routes=", ".join(real)))]
