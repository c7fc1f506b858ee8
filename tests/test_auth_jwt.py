"""JWT bearer tokens (HS256 and RS256) in front of a real proxy: claims pick the routes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from proxy.config import ConfigError
from tests.auth_helpers import auth_config, bearer, connect_with, key_subprotocols, refusal
from tests.servers import proxy, ws_url

SECRET = "s" * 40
ROUTES = {"a-demo": "embedded://turn", "b-demo": "embedded://turn"}
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PRIVATE_PEM = RSA_KEY.private_bytes(
    serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8,
    serialization.NoEncryption(),
)
PUBLIC_PEM = (
    RSA_KEY.public_key()
    .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    .decode()
)


def claims(**over: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": "alice", "routes": ["a-*"], "exp": now + 300, "nbf": now - 10, **over}


def hs256(**over: Any) -> str:
    return jwt.encode(claims(**over), SECRET, algorithm="HS256")


def hs256_signed_with_public_key(payload: dict[str, Any]) -> str:
    """The classic forgery: HS256 with the RS256 public key as the shared secret (PyJWT
    refuses to make one, so it is built by hand)."""

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signing = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + b"."
    signing += b64(json.dumps(payload).encode())
    mac = hmac.new(PUBLIC_PEM.encode(), signing, hashlib.sha256).digest()
    return (signing + b"." + b64(mac)).decode()


def rs256(**over: Any) -> str:
    return jwt.encode(claims(**over), PRIVATE_PEM, algorithm="RS256")


async def test_hs256_tokens_valid_expired_early_and_outside_their_routes() -> None:
    config = auth_config(ROUTES, {"mode": "jwt", "jwt_hs256_secret": SECRET})
    async with proxy(config) as base:
        url = ws_url(base, model="a-demo")
        async with connect_with(url, headers=bearer(hs256())) as c:
            await c.until("session.created")
        async with connect_with(url, protocols=key_subprotocols(hs256())) as c:
            assert c.ws.protocol == "realtime"
            await c.until("session.created")
        past = int(time.time()) - 600
        for token in (
            hs256(exp=past),
            hs256(nbf=int(time.time()) + 600),
            jwt.encode(claims(), "x" * 40, algorithm="HS256"),
            jwt.encode({"sub": "alice", "routes": ["*"]}, SECRET, algorithm="HS256"),  # no exp
            "not.a.token",
        ):
            status, body, _ = await refusal(url, headers=bearer(token))
            assert (status, body["error"]["code"]) == (401, "invalid_credentials"), token
        status, body, _ = await refusal(ws_url(base, model="b-demo"), headers=bearer(hs256()))
        assert (status, body["error"]["code"]) == (403, "route_not_allowed")
        # A token without a routes claim opens nothing; a malformed claim is no token.
        bare = {k: v for k, v in claims().items() if k != "routes"}
        status, body, _ = await refusal(url, headers=bearer(jwt.encode(bare, SECRET, "HS256")))
        assert (status, body["error"]["code"]) == (403, "route_not_allowed")
        status, _, _ = await refusal(url, headers=bearer(hs256(routes="a-*")))
        assert status == 401


async def test_rs256_tokens_and_no_algorithm_confusion() -> None:
    config = auth_config(
        ROUTES, {"mode": "jwt", "jwt_rs256_public_key": PUBLIC_PEM, "jwt_audience": "voice"}
    )
    async with proxy(config) as base:
        url = ws_url(base, model="a-demo")
        async with connect_with(url, headers=bearer(rs256(aud="voice"))) as c:
            await c.until("session.created")
        for token in (
            rs256(aud="other"),
            rs256(aud="voice", exp=int(time.time()) - 600),
            # HS256 signed with the public key as the secret: RS256 is pinned.
            hs256_signed_with_public_key(claims(aud="voice")),
        ):
            status, body, _ = await refusal(url, headers=bearer(token))
            assert (status, body["error"]["code"]) == (401, "invalid_credentials")
        status, body, _ = await refusal(
            ws_url(base, model="b-demo"), headers=bearer(rs256(aud="voice"))
        )
        assert (status, body["error"]["code"]) == (403, "route_not_allowed")


def test_jwt_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="needs jwt_hs256_secret or jwt_rs256_public_key"):
        auth_config(ROUTES, {"mode": "jwt"})
    with pytest.raises(ConfigError, match=r"auth\.jwt_hs256_secret"):
        auth_config(ROUTES, {"mode": "jwt", "jwt_hs256_secret": "short"})
    with pytest.raises(ConfigError, match="not a PEM public key"):
        auth_config(ROUTES, {"mode": "jwt", "jwt_rs256_public_key": "-----BEGIN nonsense"})
