"""What the persister reads of an emulated session (``proxy/persist/port.py``):
the facts stored once, the shim's snapshot, and how far upstream it is checkpointed."""

from __future__ import annotations

import asyncio
from typing import Any

from proxy.clock import now_ms, wall_offset_ms
from proxy.config import Route
from proxy.persist.checkpoint import upstream_facts
from proxy.persist.port import StoredFacts
from shim import snapshot_clock
from shim.capabilities import Classification
from shim.inputs import UpstreamCheckpointed
from shim.session import EmulatedSession


class PersistedSession:
    """The persister's view, mixed into ``EmulatedRunner``, which sets these."""

    route: Route
    cls: Classification
    model: str
    upstream_model: str
    upstream_url: str
    upstream_created: dict[str, Any]
    shim: EmulatedSession
    inputs: asyncio.Queue[object]

    def stored_facts(self) -> StoredFacts:
        upstream = upstream_facts(
            self.route.model,
            self.upstream_url,
            self.cls,
            self.upstream_model,
            self.upstream_created,
        )
        return StoredFacts(self.model, self.cls.mode, upstream)

    def snapshot(self) -> dict[str, Any]:
        # Its times on the wall clock: the replica that takes it over has its own clock.
        return snapshot_clock.to_wall(self.shim.snapshot(), wall_offset_ms())

    def upstream_position(self) -> tuple[str, int] | None:
        return self.shim.upstream_position()

    def upstream_checkpointed(self, session_id: str, seq: int) -> None:
        self.inputs.put_nowait(UpstreamCheckpointed(session_id, seq, now_ms()))
