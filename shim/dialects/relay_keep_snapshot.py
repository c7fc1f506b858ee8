"""The user's speech kept as a turn over an answer (``relay_keep.py``), in the session
snapshot.

With GA ``interrupt_response: false`` the gate holds the user's speech over the
answer and, once the answer is over, sends it from the speech's onset
(``relay_gate.py``). The client had that audio accepted; a replica that takes the
session over while it is held must send it as this one would have, or the user's
turn is lost. So the snapshot keeps the held appends from the kept onset on (what
this gate would send), bounded by the gate's ``KEEP_MS``; the rest of what the gate
holds (echo, silence, noise, to be judged and mostly dropped) is not kept.

Sent already, it is in no snapshot taken since; but the old owner may have sent it
after its last snapshot, once the answer ended, before it learnt it was fenced out,
and the upstream's own session would then hear the turn twice. So, as for a waiting
commit (``relay_wait_snapshot.py``), a session whose snapshot keeps speech never
resumes its upstream session (``kept``, read by ``proxy/resume/upstream_reopen.py``):
the answer ends ``incomplete`` for the client, and the turn goes to a fresh one.

The input timeline is not part of the snapshot: the session that restores it counts
its input from sample 0. The kept appends are put back just before it, so they go
ahead of anything the client sends after the move, and the gate judges the audio
from them on as a run kept as a turn (``AudioGate.keep``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.dialects.relay_gate import PREFIX_MS, AudioGate
from shim.input_history import ms_to_sample

KEY = "kept_speech"


def wire(gate: AudioGate) -> dict[str, Any]:
    """The snapshot's part for kept speech (nothing when none is held)."""
    if gate.kept is None or not gate.held:
        return {}
    first = gate.kept - ms_to_sample(PREFIX_MS)
    kept = [
        [end - start, ev]
        for start, end, ev in gate.held
        if end > first or (start == end and start >= first)
    ]
    return {KEY: kept} if kept else {}


def kept(snap: Mapping[str, Any]) -> bool:
    """Whether ``snap`` keeps the user's speech over an answer as the next turn."""
    return isinstance(snap.get(KEY), list)


def restore(gate: AudioGate, snap: Mapping[str, Any]) -> None:
    """Put ``wire``'s kept appends back in ``gate``, just before input sample 0."""
    raw = snap.get(KEY)
    if not isinstance(raw, list):
        return
    entries = [
        (length, ev)
        for length, ev in (item for item in raw if isinstance(item, list) and len(item) == 2)
        if isinstance(length, int) and length >= 0 and isinstance(ev, dict)
    ]
    if not entries:
        return
    start = -sum(length for length, _ in entries)
    gate.held.clear()
    for length, ev in entries:
        gate.held.append((start, start + length, ev))
        start += length
    # Everything from the first kept append on goes (``AudioGate.release_from``).
    gate.keep(gate.held[0][0] + ms_to_sample(PREFIX_MS))
