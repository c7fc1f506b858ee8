"""Where a client puts its key or token: a bearer header, or, for browsers, a subprotocol.

Browsers cannot set headers on a WebSocket, so they use the convention OpenAI's
browser clients use: ``Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.KEY``.
The server then selects ``realtime`` (``SUBPROTOCOLS``); the key is never echoed.
"""

from __future__ import annotations

from collections.abc import Mapping

# What the accept path offers to select: a browser that asked for subprotocols fails
# the connection unless one of them comes back.
SUBPROTOCOLS = ("realtime",)
KEY_SUBPROTOCOL = "openai-insecure-api-key."


class BadCredentials(Exception):
    """Credentials were sent in a form this proxy cannot read."""


def offered_subprotocols(headers: Mapping[str, str]) -> list[str]:
    raw = headers.get("Sec-WebSocket-Protocol", "")
    return [p.strip() for p in raw.split(",") if p.strip()]


def key_subprotocols(headers: Mapping[str, str]) -> list[str]:
    """Keys offered as subprotocols; BadCredentials if ``realtime`` is not offered too."""
    offered = offered_subprotocols(headers)
    keys = [p.removeprefix(KEY_SUBPROTOCOL) for p in offered if p.startswith(KEY_SUBPROTOCOL)]
    if keys and not any(p in SUBPROTOCOLS for p in offered):
        # Nothing could be selected: the browser would drop the connection (and the
        # WebSocket layer would log the offered list, key included).
        raise BadCredentials("offer the 'realtime' subprotocol along with the key")
    return keys


def presented_credential(headers: Mapping[str, str]) -> str | None:
    """The key or token the client sent, if any; BadCredentials if malformed."""
    auth = headers.get("Authorization")
    if auth is not None:
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise BadCredentials("Authorization must be 'Bearer <key>'")
        return value.strip()
    keys = key_subprotocols(headers)
    if not keys:
        return None
    if len(keys) > 1 or not keys[0]:
        raise BadCredentials("offer exactly one non-empty key subprotocol")
    return keys[0]


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """A plain ``Authorization: Bearer`` token (GET /metrics), or None."""
    scheme, _, value = headers.get("Authorization", "").strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None
