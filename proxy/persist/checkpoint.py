"""What one stored record says about its emulated session: snapshot, seq and tail.

The record's ``state`` packs the shim snapshot, the ``server_event_seq`` it was
taken at, and the events stamped since the last flush (the *tail*); the snapshot's
big, rarely changing parts are in the record's ``static`` and ``conversation``
(``shim.snapshot_split``), so that a checkpoint written as events
stream stays small. The writer is ``proxy.persist.persister``, the readers are in
``proxy.resume``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from proxy.store.base import SessionRecord
from shim.capabilities import Classification
from shim.snapshot_split import join_static

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


def serialised(record: SessionRecord) -> dict[str, bytes | SameJson]:
    """Each field a checkpoint writes, serialised, to tell what changed since.

    The bytes themselves rather than a hash of them: comparing megabytes of
    instructions costs a fraction of hashing them, at every flush. The settings
    (``static``: the instructions, the client's update as sent up) are not dumped at
    all: each snapshot holds the same strings, so comparing them as they are costs
    next to nothing (``SameJson``), where dumping megabytes of them cost tens of
    milliseconds of the event loop at every flush.
    """
    fields: dict[str, bytes | SameJson] = {}
    for name in CHECKPOINT_FIELDS:
        value = getattr(record, name)
        fields[name] = SameJson(value) if name == "static" else orjson.dumps(value)
    return fields


class SameJson:
    """A JSON value compared as the JSON it dumps to (``1`` is not ``1.0``, nor
    ``True``), without dumping it. It must not change once taken: a snapshot's
    containers are its own (``shim/snapshot.py``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SameJson) and same_json(self.value, other.value)

    __hash__ = None  # type: ignore[assignment]


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON-shaped values dump alike (up to the order of their keys)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is str:
        return a is b or a == b  # (the same string, most often: no look at its text)
    if kind is dict:
        return len(a) == len(b) and all(k in b and same_json(v, b[k]) for k, v in a.items())
    if kind is list:
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (kind is float and a != a and b != b)  # NaN: null, both
