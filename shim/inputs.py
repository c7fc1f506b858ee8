"""Typed inputs to the shim. Time always arrives as ``now_ms``, from the edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ClientEvent:
    """``arrived_ms``: when the edge read it off the client's socket, if that was before
    ``now_ms`` (a session behind handles its client's events later than they came)."""

    event: dict[str, Any]
    raw: str
    now_ms: float
    arrived_ms: float | None = None


@dataclass(frozen=True, slots=True)
class UpstreamEvent:
    """``skipped``: an event the edge could not take (nested deeper than it can stamp):
    ``event`` holds only its ``server_event_seq``, its place in the upstream's journal."""

    event: dict[str, Any]
    raw: str
    now_ms: float
    skipped: bool = False


@dataclass(frozen=True, slots=True)
class VadWindow:
    """Speech probability of one 512-sample window ending at ``end_sample`` (16 kHz)."""

    prob: float
    end_sample: int
    now_ms: float


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes; lets the shim notice that estimated playback has ended."""

    now_ms: float


@dataclass(frozen=True, slots=True)
class ClientPresence:
    """A client attached to the session (``attached``), or its last one left: the
    session waits out its disconnect grace with nobody to hear or to speak."""

    attached: bool
    now_ms: float


@dataclass(frozen=True, slots=True)
class UpstreamLost:
    """The upstream socket closed without the shim asking for it.

    ``resume`` is False when reattaching the upstream's own session was tried
    (the shim asked for it with ``ResumeUpstream``) and failed.
    """

    reason: str
    now_ms: float
    resume: bool = True


@dataclass(frozen=True, slots=True)
class UpstreamReattached:
    """The upstream is back on a new socket: its first event, ``session.created``
    for a fresh upstream session or ``session.resumed`` for the same one.

    ``unsent``: the playback reports (acks, truncates) the shim sent meanwhile that
    the edge dropped (held for the new socket past its bound, or for a socket given
    up): no answer to them will come."""

    event: dict[str, Any]
    now_ms: float
    unsent: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class UpstreamCheckpointed:
    """The session store holds the session as of upstream event ``seq`` of the
    upstream session ``session_id``: the upstream may forget the events up to it."""

    session_id: str
    seq: int
    now_ms: float


Input = (
    ClientEvent
    | UpstreamEvent
    | VadWindow
    | Tick
    | ClientPresence
    | UpstreamLost
    | UpstreamReattached
    | UpstreamCheckpointed
)
