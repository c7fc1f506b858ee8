"""What goes on an emulated session's input queue besides the shim's own inputs.

Everything that happens to a session becomes one item on one queue, handled
strictly in order by ``EmulatedRunner``: these are the items the runner handles
itself (a client attaching or leaving, a client frame, an upstream frame tagged
with its socket); any other item is a ``shim.inputs.Input`` for the shim.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

from proxy.client_frames import ClientFrame
from proxy.client_io import ClientChannel
from shim.actions import Action
from shim.inputs import UpstreamEvent


@dataclass
class Attach:
    client: ClientChannel
    first_events: list[dict[str, Any]]  # session.created / session.resumed
    done: asyncio.Event
    # Resume: everything this replica journaled after ``replay_after``.
    replay_after: int | None = None


@dataclass
class Execute:
    """Actions to run in order with everything else (e.g. after a restore)."""

    actions: list[Action]


@dataclass
class FromUpstream:
    """An upstream event, from the socket it came on: one from a socket the session
    has since replaced is dropped."""

    ws: aiohttp.ClientWebSocketResponse
    event: UpstreamEvent


@dataclass
class Detached:
    client: ClientChannel


@dataclass
class FromClient:
    client: ClientChannel
    frame: ClientFrame
    # Holds one of the session's client credits, given back once handled.
    credited: bool = False


class Stop:
    """End the session loop."""


@dataclass
class Failed:
    """Something the session depends on failed outside its loop (the VAD's inference):
    the loop raises it, as if handling an input had."""

    error: Exception
