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
from proxy.upstream_book import UpstreamBook
from proxy.vad import VadRunner
from shim.journal import RecentIds


class Drainable(Protocol):
    """A client connection or a live session, as shutdown and the session count see it."""

    async def drain(self) -> None: ...

    def slot(self) -> str | None:
        """The route whose session slot this holds ("" before it has one), or None when
        it holds none (a connection attached to a live session, whose slot that is)."""
        ...

    def yields_slot(self) -> bool:
        """Whether a new session that needs this slot takes it (a session whose client
        hung up: ``proxy/emulated/slot_yield.py``)."""
        ...


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
    draining: bool = False
    replica_id: str = ""
    # What this replica learned of each upstream server (limit, warm-up): capacity.py.
    upstreams: UpstreamBook = field(default_factory=UpstreamBook)
    # Who may connect, and the per-key session counters (proxy/auth/).
    admission: Admission = field(init=False)

    def __post_init__(self) -> None:
        self.admission = Admission(self.config)

    def occupied(self, route: str | None = None, *, firm: bool = False) -> int:
        """Sessions holding a slot (on ``route``, if given): connections not attached to
        a live session, and live sessions, in their disconnect grace too; ``firm``: not
        those that would give theirs to a new session."""
        holders = (*self.sessions, *self.live.values())
        slots = [h.slot() for h in holders if not (firm and h.yields_slot())]
        return sum(1 for s in slots if s is not None and (route is None or s == route))

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
                gather_ms=self.config.vad.gather_ms,
                inline_rows=self.config.vad.inline_rows,
                quiet_dbfs=self.config.vad.quiet_gate_dbfs,
            )
        return self.vad
