"""Who tells the upstream what was played, in the barge-in relay.

The upstream learns what was played from ``playback.ack`` (vLLM-Omni's ack-only
turn ownership: once it has seen an ack, the assistant holds the turn until its
audio is acknowledged as played). A client that sends its own acks has them
forwarded. For one that does not, once the proxy itself has acknowledged anything
(what was heard of a response it cut), it acknowledges each later response in full
when its playback ends by the ledger's estimate, so the upstream never waits for
acks that no one will send.

vLLM-Omni answers every ``playback.ack``, in order, with ``playback.acknowledged``
or a refusal (``playback_ack_too_late``, ``playback_item_not_found``,
``playback_item_mismatch``) that names no event id
(``docs/fidelity.md``, row 1d). So the acks in flight are kept in the order they
went upstream, the proxy's and the client's: an answer to one of the proxy's is
kept from the client, whose acks alone it answers.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any

from shim.snapshot import PlaybackReports

# Acks in flight whose answers are still told apart (the proxy's from the client's).
OWN_ACKS_KEPT = 32
# The codes a vLLM-Omni upstream refuses a ``playback.ack`` with.
ACK_REFUSALS = frozenset(
    {"playback_ack_too_late", "playback_item_not_found", "playback_item_mismatch"}
)


class PlaybackReporter:
    def __init__(self) -> None:
        self.client_acks = False  # the client acks itself
        self.proxy_acked = False  # the proxy has sent an ack to this upstream session
        self.upstream_audio_ms = 0.0  # the current response's audio as the upstream sent it
        self.end_reported = False  # its end was reported (or needs no report)
        # The acks in flight upstream, in order: (the proxy's own?, item id, played ms).
        self._in_flight: deque[tuple[bool, Any, Any]] = deque(maxlen=OWN_ACKS_KEPT)

    def new_response(self) -> None:
        self.upstream_audio_ms, self.end_reported = 0.0, False

    @property
    def acks_decide_turns(self) -> bool:
        return self.proxy_acked or self.client_acks

    def heard_ack(self, item_id: str, response_id: str, played: int) -> dict[str, Any]:
        """The proxy's own ``playback.ack`` of what was heard."""
        self.proxy_acked = True
        self._in_flight.append((True, item_id, played))
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

    def client_ack(self, ev: Mapping[str, Any], played: Any) -> None:
        """The client's ``playback.ack`` (or truncate, which vLLM-Omni answers as an
        ack) goes upstream: its answer is the client's. Its item as the upstream
        names it in the answer: the ack's, else ``item_<response_id>``; None if
        neither (the upstream picks one)."""
        item_id, rid = ev.get("item_id"), ev.get("response_id")
        if not (isinstance(item_id, str) and item_id):
            item_id = f"item_{rid}" if isinstance(rid, str) and rid else None
        ms = int(played) if isinstance(played, int | float) else played
        self._in_flight.append((False, item_id, ms))

    def new_upstream_session(self) -> None:
        """A fresh upstream session answers none of the acks sent to the last one."""
        self.proxy_acked = False
        self._in_flight.clear()

    def answers_own_ack(self, ev: Mapping[str, Any]) -> bool:
        """A ``playback.acknowledged`` that answers an ack the proxy sent."""
        inner = ev.get("event")
        src: Mapping[str, Any] = inner if isinstance(inner, dict) else ev
        item_id, played = src.get("item_id"), src.get("played_ms")
        for i, (own, sent_item, sent_ms) in enumerate(self._in_flight):
            if sent_ms == played and sent_item in (None, item_id):
                for _ in range(i + 1):  # the acks before it were answered already
                    self._in_flight.popleft()
                return own
        return False

    def refuses_own_ack(self, ev: Mapping[str, Any]) -> bool:
        """An ``error`` refusing the oldest ack in flight, when that ack is the proxy's."""
        err = ev.get("error")
        if not isinstance(err, dict) or err.get("code") not in ACK_REFUSALS:
            return False
        if not self._in_flight:
            return False
        return self._in_flight.popleft()[0]

    def state(self, audio_ms: float, playing: Any) -> PlaybackReports:
        return PlaybackReports(
            self.client_acks, self.proxy_acked, audio_ms, self.end_reported, playing
        )

    def restore(self, reports: PlaybackReports) -> None:
        self.client_acks = reports.client_acks
        self.proxy_acked = reports.proxy_acked
        self.upstream_audio_ms = reports.upstream_audio_ms
        self.end_reported = reports.end_reported
