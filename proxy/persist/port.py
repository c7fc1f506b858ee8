"""``MirroredSession``: what the persister needs of the session it mirrors.

The emulated runner implements it; the persister never sees the runner's class,
so persistence sits below the runner and is testable on its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from proxy.logging import Logger
from shim.journal import Journal, RecentIds


@dataclass(frozen=True, slots=True)
class StoredFacts:
    """What a record says about a session that never changes while it lives here."""

    model: str
    mode: str
    # Enough to reach the upstream again: route, url, kind, model, capabilities...
    upstream: dict[str, Any]


class MirroredSession(Protocol):
    session_id: str
    log: Logger
    # The replay log: the events a resume replays and the client's acks.
    journal: Journal
    # Client event ids already applied, for de-duplication after a resume.
    recent: RecentIds
    # Set once the session has stopped: persisting ends.
    finished: asyncio.Event

    def stored_facts(self) -> StoredFacts: ...

    def snapshot(self) -> dict[str, Any]:
        """The shim's state, as the record stores it."""
        ...

    def upstream_position(self) -> tuple[str, int] | None:
        """The upstream session and the seq the shim has handled, if it relays one."""
        ...

    def upstream_checkpointed(self, session_id: str, seq: int) -> None:
        """Everything up to ``seq`` of the upstream session is safe in the store."""
        ...

    async def replaced_elsewhere(self) -> None:
        """Another replica holds the session now: let go of it here."""
        ...
