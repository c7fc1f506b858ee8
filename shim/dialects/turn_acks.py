"""``duplex_emulated``: a native client's ``playback.ack`` answered as vLLM-Omni answers it.

vLLM-Omni answers every ``playback.ack`` with ``playback.acknowledged`` (its
``engine/duplex/session/playback_ledger.py``, ``apply_playback_ack``), or refuses
one naming an assistant item it never registered (``playback_item_not_found``);
``docs/fidelity.md``, row 1d. A native client may wait for that answer, so over a
turn-based upstream, where the proxy answers for the upstream, it sends it: the
item acked, the cursors acked and the proxy's own count of what it sent. A GA
client never sends acks and gets no answer (``playback.acknowledged`` is no GA
event).
"""

from __future__ import annotations

from typing import Any, Protocol

from shim import client_events
from shim.actions import Action, SendClient
from shim.playback import ItemPlayback


class AckHost(client_events.ClientEventHost, Protocol):
    session_id: str


def answer(s: AckHost, ev: dict[str, Any], now: float, native: bool) -> list[Action]:
    """The proxy's handling of the ack, then, to a native client, its answer."""
    out = client_events.playback_ack(s, ev, now)
    if not native or client_events.is_refusal(out):
        return out
    item_id, rid = ev.get("item_id"), ev.get("response_id")
    named = item_id if isinstance(item_id, str) and item_id else None
    named_rid = rid if isinstance(rid, str) and rid else None
    item = client_events.item_for(s, ev)
    if (named or named_rid) is not None and (
        item is None or (named_rid is not None and item.response_id != named_rid)
    ):
        # Nothing of the proxy's answers it: vLLM-Omni's refusal, which names no event.
        return [
            *out,
            s.err(
                "playback_item_not_found",
                f"No assistant response item is registered for {named_rid or named}.",
            ),
        ]
    return [*out, SendClient(_acknowledged(s.session_id, ev, item))]


def _acknowledged(session_id: str, ev: dict[str, Any], item: ItemPlayback | None) -> dict[str, Any]:
    played = int(ev["played_ms"])
    committed = ev.get("committed_ms")
    committed = int(committed) if isinstance(committed, int | float) else played
    sent = int(item.sent_ms) if item is not None else 0
    acked = int(item.acked_ms or 0) if item is not None else played
    return {
        "type": "playback.acknowledged",
        "event": {
            "type": "playback.acknowledged",
            "session_id": session_id,
            "epoch": 0,
            "item_id": item.item_id if item is not None else None,
            "played_ms": played,
            "committed_ms": committed,
            "truncate": False,
            "playback": {
                "generated_ms": sent,
                "sent_ms": sent,
                "played_ms": acked,
                "committed_ms": max(committed, 0),
            },
            "history_committed": item is not None,
        },
    }
