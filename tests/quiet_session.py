"""A session that stays quiet, for the persister's tests (``proxy/persist/persister.py``):
it handles nothing after it opened and never pokes its persister; and how often those
tests look at the store."""

from __future__ import annotations

import asyncio
from typing import Any

from proxy.logging import get_logger
from proxy.persist.port import StoredFacts
from shim.journal import Journal, RecentIds

PROBE_S = 0.02


class Quiet:
    """A session that handles nothing after it opened: it never pokes."""

    def __init__(self) -> None:
        self.session_id = "sess_" + "a" * 32
        self.log = get_logger(session_id=self.session_id)
        self.journal = Journal("evt", 1 << 20, 60_000)
        self.recent = RecentIds(16)
        self.finished = asyncio.Event()

    def stored_facts(self) -> StoredFacts:
        return StoredFacts("m", "barge_in_emulated", {})

    def snapshot(self) -> dict[str, Any]:
        return {}

    def upstream_position(self) -> tuple[str, int] | None:
        return None

    def upstream_checkpointed(self, session_id: str, seq: int) -> None:
        pass

    async def replaced_elsewhere(self) -> None:
        raise AssertionError("nobody else holds it")
