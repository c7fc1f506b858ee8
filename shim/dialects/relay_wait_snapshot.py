"""A push-to-talk commit waiting for the upstream's answer to end, in the session snapshot.

While a commit waits (``relay_turn_wait.py``), the turn it ends is the audio the gate
holds (all of it goes ahead of the commit under push-to-talk: ``relay_turn_end.py``),
then the commit and what the client sent after it. The client had all of it
accepted, so a replica that takes the session over sends it, once, as this one
would have: the snapshot keeps both beside the relay's state, and on restore they go
at the next input, to a fresh upstream session (the answer ended there). Sent
already, it is in no snapshot taken since; but the old owner may have sent it after
its last snapshot, before it learnt it was fenced out, and the upstream's own
session would then hear the turn twice. So a session whose snapshot holds a waiting
commit never resumes its upstream session (``waiting``, read by
``proxy/resume/upstream_reopen.py``): the answer the commit waited on ends
``incomplete`` for the client instead. Both parts are bounded: the held audio by the
gate's ``KEEP_MS``, what waits by ``MAX_WAITING_CHARS``.

Without a waiting commit the gate may still hold the user's speech kept as a turn
over the answer: that part is ``relay_keep_snapshot.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.actions import Action, ForwardUpstream, SendUpstream
from shim.dialects import relay_keep_snapshot
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_turn_wait import TurnWait, Waiting, size

KEY = "turn_wait"


def wire(wait: TurnWait, gate: AudioGate) -> dict[str, Any]:
    """The snapshot's part for a waiting commit, or else for kept speech (nothing
    when neither is held)."""
    if wait.queue is None:
        return relay_keep_snapshot.wire(gate)
    queue = [_entry(action, kind, whole) for action, kind, whole in wait.queue]
    return {
        KEY: {
            "held": [[start, end, ev] for start, end, ev in gate.held],
            "queue": [entry for entry in queue if entry is not None],
            "stopped": wait.stopped,
        }
    }


def waiting(snap: Mapping[str, Any]) -> bool:
    """Whether ``snap`` holds a commit waiting for the upstream's answer to end."""
    return isinstance(snap.get(KEY), dict)


def restore(wait: TurnWait, gate: AudioGate, snap: Mapping[str, Any]) -> None:
    """Take the waiting commit back from ``wire``'s part of ``snap``, if it has one."""
    raw = snap.get(KEY)
    if not isinstance(raw, dict):
        relay_keep_snapshot.restore(gate, snap)
        return
    queue: list[Waiting] = []
    for entry in raw.get("queue") or ():
        action = _action(entry)
        if action is not None:
            kind, whole = entry.get("kind"), entry.get("whole", True)
            queue.append((action, kind if isinstance(kind, str) else None, whole is not False))
    wait.queue = queue
    wait.chars = sum(size(a) for a, _, _ in queue if isinstance(a, (SendUpstream, ForwardUpstream)))
    stopped = raw.get("stopped")
    wait.stopped = stopped if isinstance(stopped, str) else None
    gate.held.clear()
    for item in raw.get("held") or ():
        if isinstance(item, list) and len(item) == 3:
            start, end, ev = item
            if isinstance(start, int) and isinstance(end, int) and isinstance(ev, dict):
                gate.held.append((start, end, ev))


def _entry(action: Action, kind: object, whole: bool) -> dict[str, Any] | None:
    by = kind if isinstance(kind, str) else None
    if isinstance(action, ForwardUpstream):
        return {"kind": by, "whole": whole, "raw": action.raw}
    if isinstance(action, SendUpstream):
        span = {} if action.span is None else {"span": list(action.span)}
        return {"kind": by, "whole": whole, "event": action.event, **span}
    return None  # only upstream-bound actions wait (``TurnWait.route``)


def _action(entry: object) -> Action | None:
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("raw"), str):
        return ForwardUpstream(entry["raw"])
    if isinstance(entry.get("event"), dict):
        span = entry.get("span")  # where an append lies on the client's timeline
        if isinstance(span, list) and len(span) == 2 and all(type(v) is int for v in span):
            return SendUpstream(entry["event"], (span[0], span[1]))
        return SendUpstream(entry["event"])
    return None
