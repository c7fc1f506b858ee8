"""What one stored record says about its emulated session: snapshot, seq and tail.

The record's ``state`` packs the shim snapshot, the ``server_event_seq`` it was
taken at, and the events stamped since the last flush (the *tail*); the snapshot's
big, rarely changing parts are in the record's ``static`` and ``conversation``
(``shim.snapshot``'s ``split_static``), so that a checkpoint written as events
stream stays small. The writer is ``proxy.persist.persister``, the readers are in
``proxy.resume``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from proxy.store.base import SessionRecord
from shim.capabilities import Classification
from shim.snapshot import join_static

# 2: the snapshot's static parts are in the record's ``static`` and ``conversation``.
STATE_VERSION = 2


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
    if state.get("v") not in (1, STATE_VERSION):
        # A bare shim snapshot (no tail): it was taken at the log head.
        return Checkpoint(record.last_seq, state, [])
    tail = [(int(seq), str(text)) for seq, text in state.get("tail", ())]
    shim = join_static(dict(state["shim"]), record.static, record.conversation)
    return Checkpoint(int(state["seq"]), shim, tail)


def upstream_facts(
    route: str, url: str, cls: Classification, upstream_model: str, created: dict[str, Any]
) -> dict[str, Any]:
    """A record's ``upstream``: enough for another replica to reach the upstream again
    and rebuild the session's classification (``proxy.resume``).

    Never the upstream's resume token: only the snapshot carries it, sealed
    (``proxy.persist.sealing``).
    """
    created = {k: v for k, v in created.items() if k != "resume_token"}
    return {
        "route": route,
        "url": url,
        "kind": cls.kind,
        "upstream_model": upstream_model,
        "capabilities": dict(cls.upstream_capabilities or {}),
        "reasons": list(cls.reasons),
        "created": created,
    }


# The record fields a checkpoint writes when they changed (owner: moved by the lease;
# the seqs: by the log).
CHECKPOINT_FIELDS: tuple[str, ...] = ("token_hash", "model", "mode", "state", "static")
CHECKPOINT_FIELDS += ("conversation", "upstream", "recent_event_ids")


def serialised(record: SessionRecord) -> dict[str, bytes]:
    """Each field a checkpoint writes, serialised, to tell what changed since.

    The bytes themselves rather than a hash of them: comparing megabytes of
    instructions costs a fraction of hashing them, at every flush.
    """
    return {name: orjson.dumps(getattr(record, name)) for name in CHECKPOINT_FIELDS}
