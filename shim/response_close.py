"""The events that end a response, as the client must hear them.

A response that ends early (cancelled, failed, lost) is truncated at what was
played, and its transcript cut to what was heard, so the conversation keeps only
what the listener got (``docs/protocol.md``).
"""

from __future__ import annotations

from typing import Any

from shim import wire
from shim.actions import Action, SendClient
from shim.output import ActiveResponse


def close_response(
    resp: ActiveResponse,
    now: float,
    status: str,
    reason: str | None,
    truncate_at: int | None = None,
    full_text: str | None = None,
    told_done: bool = False,
    announce: bool = True,
) -> list[Action]:
    """The events that end ``resp``; an early end truncates it at what was heard.

    ``told_done``: its response.done already went out (it ended, but still plays), so
    an early end only truncates it: a response ends once. ``announce`` False: the cut
    is kept in the proxy's books but not told (a client's ``response.cancel``: GA and
    vLLM-Omni send no ``conversation.item.truncated`` then; the client truncates
    itself, once, where it stopped playing).
    """
    pb = resp.playback
    transcript = full_text if full_text is not None else (pb.transcript if pb else "")
    played: int | None = None
    if status != "completed" and pb is not None:
        played = truncate_at if truncate_at is not None else pb.audio_end_ms(now)
        pb.truncated_ms = played
        transcript = pb.heard_transcript(played)
    ids, before = (resp.response_id, resp.item_id), resp.previous_item_id
    events = [] if told_done else wire.response_end(*ids, status, transcript, reason, before)
    out: list[Action] = [SendClient(e) for e in events]
    if played is not None and announce and pb is not None:
        pb.told_by = "proxy"
        out.append(SendClient(wire.truncated(resp.item_id, played)))
    return out


def lost_response_done(response_id: str, output: list[dict[str, Any]]) -> SendClient:
    """``response.done`` for a response whose upstream was lost before it finished."""
    return SendClient(
        {
            "type": "response.done",
            "response": wire.response(
                response_id,
                "incomplete",
                output,
                wire.status_details("incomplete", "upstream_lost"),
            ),
        }
    )
