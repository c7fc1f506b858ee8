"""The assistant items the client was sent (the playback ledger), in the session snapshot.

A client that reconnects elsewhere goes on with the conversation it has: a GA client
truncates the item its playback stopped in (``conversation.item.truncate``) and may
retrieve it. Where the proxy answers those itself (``shim/client_events.py``), it
answers from the ledger, so the ledger's recent items move with the session: their
ids, audio sent, transcript and its marks, and a truncation already made and who
told the client of it. Bounded to the most recent ``KEPT`` items (a truncate is of the
item playing, or just played).

How much of an item was heard is not carried: after the move the client is taken to
have heard every item in full, until its truncate says otherwise. Where its playback
ends is (``play_end_ms``, on the edge's clock; the store's on the wall clock,
``shim/snapshot_clock.py``): what runs from that end, GA's idle timeout, waits for it
(``ItemPlayback.restored_end_ms``). A snapshot without it ends each item long ago. The items are put
back before the session's own restore (``proxy/resume/from_store.py``), which carries
a response on in the ledger as the newest item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.playback import ItemPlayback, PlaybackLedger

KEY = "played"
KEPT = 8
# Played out long ago, in full: the playback clock of an item restored after a move
# (finite: the input clock maps the answer's end onto samples, ``relay_input_clock.py``).
LONG_AGO_MS = -1e12
TOLD_BY = ("proxy", "client")


def _ends(item: ItemPlayback) -> float | None:
    """Where the item's playback ends at the listener (None: long ago)."""
    end = max(item.play_end_ms, item.restored_end_ms or item.play_end_ms)
    return end if end > LONG_AGO_MS else None


def wire(ledger: PlaybackLedger) -> dict[str, Any]:
    """The snapshot's part for the recent assistant items (nothing when none)."""
    items = [item for item in ledger.items() if item.sent_samples or item.transcript]
    if not items:
        return {}
    return {
        KEY: [
            {
                "item_id": item.item_id,
                "response_id": item.response_id,
                "rate_hz": item.rate_hz,
                "sent_samples": item.sent_samples,
                "transcript": item.transcript,
                "marks": [[ms, chars] for ms, chars in item.marks],
                "truncated_ms": item.truncated_ms,
                "told_by": item.told_by,
                "play_end_ms": _ends(item),
            }
            for item in items[-KEPT:]
        ]
    }


def restore(ledger: PlaybackLedger, snap: Mapping[str, Any]) -> None:
    """Put ``wire``'s items back in ``ledger``, oldest first, as heard in full."""
    raw = snap.get(KEY)
    if not isinstance(raw, list):
        return
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        item_id, response_id, rate = (
            entry.get("item_id"),
            entry.get("response_id"),
            entry.get("rate_hz"),
        )
        if not (isinstance(item_id, str) and isinstance(response_id, str)):
            continue
        if not isinstance(rate, int) or rate <= 0:
            continue
        item = ledger.start(item_id, response_id, rate)
        sent = entry.get("sent_samples")
        item.sent_samples = sent if isinstance(sent, int) and sent >= 0 else 0
        text = entry.get("transcript")
        item.transcript = text if isinstance(text, str) else ""
        item.marks = [
            (float(mark[0]), int(mark[1]))
            for mark in entry.get("marks") or ()
            if isinstance(mark, list)
            and len(mark) == 2
            and all(isinstance(x, (int, float)) for x in mark)
        ]
        cut = entry.get("truncated_ms")
        item.truncated_ms = cut if isinstance(cut, int) else None
        # Who told the client the cut: a later truncate never grows a told cut back
        # (``shim/client_events.py``). A snapshot stored without it tells nobody.
        told = entry.get("told_by")
        item.told_by = told if told in TOLD_BY and item.truncated_ms is not None else None
        item.first_sent_ms = item.play_end_ms = LONG_AGO_MS
        end = entry.get("play_end_ms")
        if isinstance(end, (int, float)) and not isinstance(end, bool) and end > LONG_AGO_MS:
            item.restored_end_ms = float(end)
        item.finished = True
