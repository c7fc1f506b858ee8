"""Who tells the upstream what was played, in the barge-in relay.

The upstream learns what was played from ``playback.ack`` (vLLM-Omni's ack-only
turn ownership: once it has seen an ack, the assistant holds the turn until its
audio is acknowledged as played). A client that sends its own acks has them
forwarded. For one that does not, once the proxy itself has acknowledged anything
(what was heard of a response it cut), it acknowledges each later response in full
when its playback ends by the ledger's estimate, so the upstream never waits for
acks that no one will send.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

from shim.snapshot import PlaybackReports

# Acks the proxy sent whose answers it still recognises as its own.
OWN_ACKS_KEPT = 32


class PlaybackReporter:
    def __init__(self) -> None:
        self.client_acks = False  # the client acks itself
        self.proxy_acked = False  # the proxy has sent an ack to this upstream session
        self.upstream_audio_ms = 0.0  # the current response's audio as the upstream sent it
        self.end_reported = False  # its end was reported (or needs no report)
        # (item id, played ms) of acks the proxy sent: their answers are its own.
        self._own: deque[tuple[str, int]] = deque(maxlen=OWN_ACKS_KEPT)

    def new_response(self) -> None:
        self.upstream_audio_ms, self.end_reported = 0.0, False

    @property
    def acks_decide_turns(self) -> bool:
        return self.proxy_acked or self.client_acks

    def heard_ack(self, item_id: str, response_id: str, played: int) -> dict[str, Any]:
        """The proxy's own ``playback.ack`` of what was heard."""
        self.proxy_acked = True
        self._own.append((item_id, played))
        return {
            "type": "playback.ack",
            "played_ms": played,
            "committed_ms": played,
            "response_id": response_id,
            "item_id": item_id,
        }

    def played_in_full(self) -> int | None:
        """What to ack when a response is played out: all of it, in the upstream's own
        measure of what it sent (so that it hands the turn back)."""
        self.end_reported = True
        if self.upstream_audio_ms <= 0:
            return None
        return math.ceil(self.upstream_audio_ms - 1e-6)

    def answers_own_ack(self, ev: Mapping[str, Any]) -> bool:
        """A ``playback.acknowledged`` that answers an ack the proxy sent."""
        inner = ev.get("event")
        src: Mapping[str, Any] = inner if isinstance(inner, dict) else ev
        item_id, played = src.get("item_id"), src.get("played_ms")
        if not isinstance(item_id, str) or not isinstance(played, int):
            return False
        if (item_id, played) in self._own:
            self._own.remove((item_id, played))
            return True
        return False

    def state(self, audio_ms: float, playing: Any) -> PlaybackReports:
        return PlaybackReports(
            self.client_acks, self.proxy_acked, audio_ms, self.end_reported, playing
        )

    def restore(self, reports: PlaybackReports) -> None:
        self.client_acks = reports.client_acks
        self.proxy_acked = reports.proxy_acked
        self.upstream_audio_ms = reports.upstream_audio_ms
        self.end_reported = reports.end_reported
