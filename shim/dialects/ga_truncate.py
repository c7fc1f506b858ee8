"""A GA client's ``conversation.item.truncate`` over a duplex upstream, after the
relay's own handling (``duplex_relay.py``): what the upstream must also hear.

vLLM-Omni owns playback by acks (``docs/fidelity.md``, row 1), so the proxy
acknowledges what was heard (the item as cut, which never grows back:
``shim/client_events.py``), and an answer the upstream generated in full but still
counts as playing is stopped there (``relay_turn_wait.stop_playback``). A truncate
the upstream takes itself goes up at the point the item was cut.
"""

from __future__ import annotations

from collections import deque

from shim.actions import Action, SendUpstream
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_turn_wait import TurnWait, stop_playback
from shim.output import ActiveResponse
from shim.playback import ItemPlayback


def upstream_too(
    out: list[Action],
    item: ItemPlayback,
    resp: ActiveResponse | None,
    reports: PlaybackReporter,
    wait: TurnWait,
    cancelled_ids: deque[str],
) -> list[Action]:
    """``out`` (the relay's accepted truncate) with what the upstream must hear too."""
    cut = item.truncated_ms if item.truncated_ms is not None else 0
    acked = False
    for n, action in enumerate(out):
        if not isinstance(action, SendUpstream):
            continue
        kind = action.event.get("type")
        acked = acked or kind == "playback.ack"
        if kind == "conversation.item.truncate" and action.event.get("audio_end_ms") != cut:
            out[n] = SendUpstream({**action.event, "audio_end_ms": cut})
    if not acked:  # The upstream owns playback by acks: what was heard.
        out.append(SendUpstream(reports.heard_ack(item.item_id, item.response_id, cut)))
    if resp is not None and resp.item_id == item.item_id:
        reports.end_reported = True  # its end, as heard, is the truncation's
        if resp.upstream_done and not resp.cancelled:  # and the rest is not played
            out.append(stop_playback(wait, cancelled_ids, resp.response_id))
    return out
