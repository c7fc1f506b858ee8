"""What the session modes and resume see of one client connection.

The handshake (``proxy.handshake``) owns the connection; the layers below it take
this protocol, so none of them imports the handshake.
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web

from proxy.client_frames import ClientFrame
from proxy.client_io import ClientChannel
from proxy.config import Route
from proxy.logging import Logger
from proxy.state import ProxyState


class ClientConnection(Protocol):
    state: ProxyState
    client: ClientChannel
    # The upgrade request (its path and query say what kind of client this is).
    request: web.Request
    # Rebound as the connection learns its session, route and mode.
    log: Logger
    route: Route | None
    # Frames the client sent before its session was ready, applied next in order.
    pending: list[ClientFrame]
    # The upstream session a passthrough connection serves (event id de-duplication).
    passthrough_sid: str | None
    # Who the connection authenticated as ("" without auth): resume is bound to it.
    key_id: str

    def committing(self) -> None:
        """A token rotation or a session's store write begins (checked for a drain
        just before, with no await between): a drain waits for the client to be told."""

    def told(self, handed: bool = False) -> None:
        """The client has its session's opening (its resume token), or is ``handed``
        to an emulated session that sends it: a drain may close it from here."""
