"""The replay a session taken over from the store owes its client: the stored log
merged with the record's tail (see ``proxy.persist``)."""

from __future__ import annotations

import orjson

from proxy.clock import now_ms
from proxy.persist.checkpoint import checkpoint_of
from proxy.resume.request import gap
from proxy.store.base import SessionRecord
from shim.journal import Journal


def replay_events(
    last: int, record: SessionRecord, logged: list[tuple[int, str]] | None
) -> list[tuple[int, str]]:
    """Every event after ``last`` up to the record's snapshot, from log and tail."""
    cp = checkpoint_of(record)
    # A log written without tails may run ahead of its snapshot: then replay to its head.
    head = max(cp.seq, record.last_seq)
    if last >= head:
        # The client is ahead of the store (its owner died before persisting what it
        # had sent): carry on after what the client has.
        return []
    if logged is None:
        raise gap()
    by_seq = dict(logged)
    by_seq.update(cp.tail)
    wanted = range(last + 1, head + 1)
    if any(seq not in by_seq for seq in wanted):
        raise gap()
    return [(seq, by_seq[seq]) for seq in wanted]


def preload(journal: Journal, events: list[tuple[int, str]]) -> None:
    """Carry the taken-over replay log on: the same events, ids and seqs, in order."""
    now = now_ms()
    for seq, text in events:
        journal.stamp(orjson.loads(text), now)
        if journal.seq != seq:
            raise RuntimeError(f"replay log out of step: {journal.seq} != {seq}")
