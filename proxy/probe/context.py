"""What every check gets: the settings, the stimulus, an HTTP session, shared traces."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from proxy.probe.client import ProbeConnection, SessionInfo
from proxy.probe.handshake import Target, open_session
from proxy.probe.stimulus import Stimulus


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    url: str
    model: str | None = None
    #: Concurrent sessions of the fairness check.
    sessions: int = 4
    speech: str | None = None
    #: Length of one microphone append.
    chunk_ms: int = 40
    #: How long a spoken turn may wait for the first audio of its answer.
    response_timeout_s: float = 10.0
    #: Barge-in limit when the endpoint declares no ``target_barge_in_latency_ms``.
    barge_in_limit_ms: int = 1000
    #: Assistant audio heard before the probe talks over it.
    overlap_lead_ms: int = 300
    #: Backpressure: output the probe asks for while it does not read, and how much of
    #: it an endpoint may hold for a stalled reader before that counts as unbounded.
    backpressure_request_mb: int = 64
    backpressure_limit_mb: int = 32
    #: Hard limit for one check.
    check_timeout_s: float = 60.0


@dataclass(slots=True)
class ProbeContext:
    settings: ProbeSettings
    stimulus: Stimulus
    http: aiohttp.ClientSession
    #: The first session's description (set by the ``declared`` check).
    endpoint: SessionInfo | None = None
    _shared: dict[str, Any] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    @property
    def target(self) -> Target:
        return Target(self.settings.url, self.settings.model)

    @property
    def dialect(self) -> str | None:
        return self.endpoint.dialect if self.endpoint is not None else None

    @property
    def capabilities(self) -> dict[str, Any]:
        caps = self.endpoint.capabilities if self.endpoint is not None else None
        return caps or {}

    async def open(self, *, record: bool = True) -> ProbeConnection:
        return await open_session(self.http, self.target, record=record)

    async def shared(self, key: str, make: Callable[[], Awaitable[Any]]) -> Any:
        """A scenario several checks analyse, run once."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._shared:
                self._shared[key] = await make()
            return self._shared[key]
