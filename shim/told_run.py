"""A user turn told begun (``speech_started``) and not yet stopped, in the snapshot.

The replica that takes a session over starts its VAD afresh: speech going on at
the move would be a new run to it, told begun again (two starts, one stop; a GA
client takes each start for an interruption). The snapshot names the told run's
item instead, and the new owner carries it on: its VAD goes on as already speaking,
from its own stream's start, and the run's one ``speech_stopped`` (and commit) comes
under the same item. The audio before the move stays with the old owner: the turn
committed is what the new owner heard of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.turns import Turns
from shim.vad_gate import VadGate

KEY = "speech_run"


def wire(turns: Turns) -> dict[str, Any]:
    return {KEY: {"item_id": turns.runs.item}} if turns.runs.item is not None else {}


def restore(turns: Turns, gate: VadGate, vad_on: bool, snap: Mapping[str, Any]) -> None:
    run = snap.get(KEY)
    item = run.get("item_id") if isinstance(run, dict) else None
    if not vad_on or not isinstance(item, str) or not item:
        return
    runs = turns.runs
    runs.item, runs.start_ms, runs.is_turn = item, 0, True
    gate.resume_speaking()
