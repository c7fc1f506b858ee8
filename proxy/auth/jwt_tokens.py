"""JWT bearer tokens: HS256 with a shared secret, RS256 with a public key (PyJWT).

The algorithm is pinned by the configured key, never taken from the token alone (no
``alg: none``, no HS256 signed with the RS256 public key). ``exp`` and ``sub`` are
required; ``nbf``, and ``aud``/``iss`` where configured, are checked. The ``routes``
claim, a list of model names or globs, picks what the token may open: a token
without it opens nothing.
"""

from __future__ import annotations

from typing import Any

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_public_key

from proxy.auth.principal import Principal
from proxy.config import AuthConfig

LEEWAY_S = 5  # clock skew between the issuer and this replica


class TokenRejected(Exception):
    """The token is malformed, badly signed, expired, not yet valid or lacks a claim."""


class JwtVerifier:
    def __init__(self, config: AuthConfig) -> None:
        self._config = config
        self._keys: dict[str, Any] = {}
        if config.jwt_hs256_secret:
            self._keys["HS256"] = config.jwt_hs256_secret.encode()
        if config.jwt_rs256_public_key:
            # Parsed once here (the config already checked it is a PEM public key).
            self._keys["RS256"] = load_pem_public_key(config.jwt_rs256_public_key.encode())

    def verify(self, token: str) -> Principal:
        try:
            alg = jwt.get_unverified_header(token).get("alg")
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"malformed token: {exc}") from None
        key = self._keys.get(alg) if isinstance(alg, str) else None
        if key is None or not isinstance(alg, str):
            raise TokenRejected(f"tokens signed with {alg!r} are not accepted here")
        cfg = self._config
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=cfg.jwt_audience,
                issuer=cfg.jwt_issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "sub"], "verify_aud": cfg.jwt_audience is not None},
            )
        except jwt.PyJWTError as exc:
            raise TokenRejected(str(exc)) from None
        routes = claims.get("routes", [])
        if not isinstance(routes, list) or not all(isinstance(r, str) for r in routes):
            raise TokenRejected("the routes claim must be a list of model names or globs")
        return Principal(
            id=f"jwt:{claims['sub']}",
            routes=tuple(routes),
            max_sessions=cfg.jwt_max_sessions,
            sessions_per_minute=cfg.jwt_sessions_per_minute,
        )
