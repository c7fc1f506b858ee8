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
    #: Sent as ``Authorization: Bearer`` on the probe's WebSockets (a proxy with client
    #: auth); never to ``--metrics-url`` nor, with ``--compare``, to the direct URL.
    api_key: str | None = field(default=None, repr=False)
    #: Concurrent sessions of the fairness check.
    sessions: int = 4
    speech: str | None = None
    #: Length of one microphone append.
    chunk_ms: int = 40
    #: How long a spoken turn may wait for the first audio of its answer.
    response_timeout_s: float = 10.0
    #: How many times the barge-in check talks over an answer (fresh session each time).
    barge_in_trials: int = 1
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
    #: Capacity: the most sessions the probe opens while looking for the endpoint's limit.
    capacity_max: int = 16
    #: The model server's Prometheus endpoint (``gpu_memory``); None: that check is unsupported.
    metrics_url: str | None = None
    #: Seconds between two metrics samples.
    metrics_interval_s: float = 0.25


@dataclass(slots=True)
class ProbeContext:
    settings: ProbeSettings
    stimulus: Stimulus
    http: aiohttp.ClientSession
    #: The first session's description (set by the ``declared`` check).
    endpoint: SessionInfo | None = None
    #: The check running now (metrics samples are labelled with it).
    current: str = ""
    #: Set by the runner when ``metrics_url`` is given (a ``metrics.MetricsSampler``).
    sampler: Any = None
    #: check -> how many sessions it held open at once (for growth per session).
    loaded: dict[str, int] = field(default_factory=dict)
    #: check -> the check whose shared scenario it reused (set by ``shared``).
    reused: dict[str, str] = field(default_factory=dict)
    _made_by: dict[str, str] = field(default_factory=dict)
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
                self._made_by[key] = self.current
                self._shared[key] = await make()
            elif self._made_by[key] != self.current:
                self.reused[self.current] = self._made_by[key]
            return self._shared[key]
