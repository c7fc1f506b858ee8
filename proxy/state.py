"""``ProxyState``: everything one proxy process shares between its sessions."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp

from proxy.auth.admission import Admission
from proxy.config import Config, Route
from proxy.metrics import Metrics
from proxy.store.base import SessionStore
from proxy.vad import VadRunner
from shim.journal import RecentIds


class Drainable(Protocol):
    """A client connection or a live session, as shutdown sees it."""

    async def drain(self) -> None: ...


@dataclass
class ProxyState:
    """Everything one proxy process shares between its sessions."""

    config: Config
    metrics: Metrics = field(default_factory=Metrics)
    http: aiohttp.ClientSession | None = None
    store: SessionStore | None = None
    vad: VadRunner | None = None
    # Resolved URL for each `embedded://KIND` upstream, once its backend is up.
    embedded_urls: dict[str, str] = field(default_factory=dict)
    # Client connections open on this replica.
    sessions: set[Drainable] = field(default_factory=set)
    # Emulated sessions alive on this replica (attached or in disconnect grace); the
    # emulated layer registers its runners here and knows their type.
    live: dict[str, Drainable] = field(default_factory=dict)
    # Client event ids already applied, per passthrough session (most recent sessions).
    passthrough_ids: OrderedDict[str, RecentIds] = field(default_factory=OrderedDict)
    per_route: dict[str, int] = field(default_factory=dict)
    draining: bool = False
    replica_id: str = ""
    # Who may connect, and the per-key session counters (proxy/auth/).
    admission: Admission = field(init=False)

    def __post_init__(self) -> None:
        self.admission = Admission(self.config)

    def upstream_url(self, route: Route) -> str:
        kind = route.embedded_kind
        if kind is None:
            return route.upstream
        return self.embedded_urls[kind]

    def vad_runner(self) -> VadRunner:
        """The process-wide batched VAD runner, created on first use."""
        if self.vad is None:
            self.vad = VadRunner(
                max_batch=self.config.vad.max_batch,
                threads=self.config.vad.threads,
                metrics=self.metrics,
            )
        return self.vad
