"""``Admission``: authenticate a WebSocket upgrade, check its route, origin and limits.

Every check runs before the upgrade, so a refused client gets a plain HTTP answer
(401 no or bad credentials, 403 route or origin not allowed, 429 a per-key limit)
with a JSON body ``{"error": {"type", "code", "message"}}``. ``admitted`` wraps the
accept handler: it admits, then releases the connection's slot when the handler ends.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import orjson
from aiohttp import web

from proxy.auth.api_keys import KeyRing, digest_matches
from proxy.auth.credentials import (
    BadCredentials,
    bearer_token,
    key_subprotocols,
    presented_credential,
)
from proxy.auth.jwt_tokens import JwtVerifier, TokenRejected
from proxy.auth.limits import SessionLimits
from proxy.auth.origin import origin_allowed
from proxy.auth.principal import ANONYMOUS, Principal
from proxy.config import AuthConfig, Config
from proxy.logging import get_logger

PRINCIPAL = web.RequestKey("duplex_proxy_principal", Principal)
R = TypeVar("R")


def _refusal(
    cls: type[web.HTTPException], kind: str, code: str, message: str, **headers: str
) -> web.HTTPException:
    body = {"error": {"type": kind, "code": code, "message": message}}
    return cls(text=orjson.dumps(body).decode(), content_type="application/json", headers=headers)


def unauthorized(code: str, message: str) -> web.HTTPException:
    get_logger().info("auth_refused", reason=code, status=401)
    challenge = 'Bearer realm="duplex-proxy"'
    return _refusal(
        web.HTTPUnauthorized,
        "authentication_error",
        code,
        message,
        **{"WWW-Authenticate": challenge},
    )


def forbidden(code: str, message: str) -> web.HTTPException:
    return _refusal(web.HTTPForbidden, "permission_error", code, message)


@dataclass(slots=True)
class Grant:
    """One admitted connection: its principal and its slot in the per-key limits."""

    principal: Principal
    limits: SessionLimits
    released: bool = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self.limits.release(self.principal)


class Admission:
    """One per process: the configured keys or token verifier, and the limit counters."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.auth: AuthConfig = config.auth
        self.keys = KeyRing(self.auth.keys)
        self.jwt = JwtVerifier(self.auth) if self.auth.mode == "jwt" else None
        self.limits = SessionLimits()

    def identify(self, request: web.Request) -> Principal:
        """Who the request authenticates as; raises 401 when it does not."""
        try:
            if self.auth.mode in (None, "none"):
                key_subprotocols(request.headers)  # a key offered so it could not be selected
                return ANONYMOUS
            credential = presented_credential(request.headers)
        except BadCredentials as exc:
            raise unauthorized("invalid_credentials", str(exc)) from None
        if credential is None:
            raise unauthorized(
                "missing_credentials",
                "send Authorization: Bearer <key>, or the subprotocols "
                "'realtime, openai-insecure-api-key.<key>'",
            )
        if self.jwt is not None:
            try:
                return self.jwt.verify(credential)
            except TokenRejected as exc:
                raise unauthorized("invalid_credentials", f"token rejected: {exc}") from None
        principal = self.keys.find(credential)
        if principal is None:
            raise unauthorized("invalid_credentials", "unknown API key")
        return principal

    def admit(self, request: web.Request) -> Grant:
        """Admit the upgrade or raise the HTTP refusal; the caller releases the grant."""
        log = get_logger()
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, request.host, self.auth.allowed_origins):
            log.info("auth_refused", reason="origin_not_allowed", origin=origin)
            raise forbidden("origin_not_allowed", f"origin {origin!r} may not connect here")
        principal = self.identify(request)
        model = request.query.get("model")
        route = self.config.route_for(model) if model else None
        if model and route is not None and not principal.allows(model, route.model):
            log.info("auth_refused", reason="route_not_allowed", key_id=principal.id, model=model)
            raise forbidden("route_not_allowed", f"these credentials may not open {model!r}")
        hit = self.limits.acquire(principal)
        if hit is not None:
            log.info("auth_refused", reason=hit.code, key_id=principal.id)
            raise _refusal(
                web.HTTPTooManyRequests,
                "rate_limit_error",
                hit.code,
                hit.message,
                **{"Retry-After": str(hit.retry_after_s)},
            )
        request[PRINCIPAL] = principal
        return Grant(principal, self.limits)


def principal_of(request: web.Request) -> Principal:
    """Who an admitted request authenticated as (everyone is ANONYMOUS without auth)."""
    principal: Principal = request.get(PRINCIPAL, ANONYMOUS)
    return principal


class Admitting(Protocol):
    admission: Admission


S = TypeVar("S", bound=Admitting)


def admitted(
    handler: Callable[[web.Request, S], Awaitable[R]],
) -> Callable[[web.Request, S], Awaitable[R]]:
    """``handler`` run only for an admitted request, its slot released when it ends."""

    @functools.wraps(handler)
    async def run(request: web.Request, state: S) -> R:
        grant = state.admission.admit(request)
        try:
            return await handler(request, state)
        finally:
            grant.release()

    return run


def check_metrics_token(request: web.Request, auth: AuthConfig) -> None:
    """401 unless ``[auth] metrics_token_sha256`` is unset or the bearer token matches it."""
    digest = auth.metrics_token_sha256
    if digest is None:
        return
    token = bearer_token(request.headers)
    if token is None or not digest_matches(token, digest):
        raise unauthorized("invalid_credentials", "GET /metrics needs its bearer token")
