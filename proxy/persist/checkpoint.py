"""What one stored record says about its emulated session: snapshot, seq and tail.

The record's ``state`` packs the shim snapshot, the ``server_event_seq`` it was
taken at, and the events stamped since the last flush (the *tail*); the writer is
``proxy.persist.persister``, the readers are in ``proxy.resume``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy.store.base import SessionRecord
from shim.capabilities import Classification

STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What a stored record says about its session at one instant."""

    seq: int  # the server_event_seq the snapshot was taken at
    shim: dict[str, Any]  # EmulatedSession.snapshot()
    tail: list[tuple[int, str]]  # events up to ``seq`` perhaps not in the log yet


def pack_state(seq: int, shim: dict[str, Any], tail: list[tuple[int, str]]) -> dict[str, Any]:
    return {"v": STATE_VERSION, "seq": seq, "shim": shim, "tail": [[s, t] for s, t in tail]}


def checkpoint_of(record: SessionRecord) -> Checkpoint:
    state = record.state
    if state.get("v") != STATE_VERSION:
        # A bare shim snapshot (no tail): it was taken at the log head.
        return Checkpoint(record.last_seq, state, [])
    tail = [(int(seq), str(text)) for seq, text in state.get("tail", ())]
    return Checkpoint(int(state["seq"]), dict(state["shim"]), tail)


def upstream_facts(
    route: str, url: str, cls: Classification, upstream_model: str, created: dict[str, Any]
) -> dict[str, Any]:
    """A record's ``upstream``: enough for another replica to reach the upstream again
    and rebuild the session's classification (``proxy.resume``)."""
    return {
        "route": route,
        "url": url,
        "kind": cls.kind,
        "upstream_model": upstream_model,
        "capabilities": dict(cls.upstream_capabilities or {}),
        "reasons": list(cls.reasons),
        "created": created,
    }
