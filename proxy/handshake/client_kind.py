"""What kind of client a connection is, and the model its opening names."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from shim.capabilities import ClientKind


def client_kind(request: web.Request) -> ClientKind:
    """``native`` for vLLM-Omni's duplex protocol (``?duplex=1`` or ``/v1/duplex``),
    else ``ga``: an OpenAI GA realtime client (``docs/protocol.md``)."""
    if request.query.get("duplex") == "1" or request.path.rstrip("/").endswith("/duplex"):
        return "native"
    return "ga"


def model_from(event: dict[str, Any]) -> str | None:
    session = event.get("session")
    for source in (session if isinstance(session, dict) else {}, event):
        model = source.get("model")
        if isinstance(model, str) and model:
            return model
    return None
