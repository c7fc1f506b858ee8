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
kept from the client, whose acks alone it answers. A refusal that names its
response (``No assistant response item is registered for {rid}.``) is matched by
it. A ``conversation.item.truncate`` is in flight too: vLLM-Omni either refuses it
(``item_not_found`` ``Conversation item not found: {item}``, ``bad_event``
``conversation.item.truncate ...``: ``realtime_events.resolve_truncate_item``), with
no ack answer, or turns it into a ``playback.ack`` of its item, answered as one.

A report made while the upstream is lost waits in the edge's outbox: a snapshot
then marks it maybe unsent, and an owner restoring that snapshot awaits no answer
to it (the old owner's outbox is gone with it).
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from shim.snapshot import PlaybackReports
from shim.wire import native_unknown_item

# Acks in flight whose answers are still told apart (the proxy's from the client's);
# the upstream answers each at once, so this many are never outstanding in practice.
OWN_ACKS_KEPT = 256
# The codes a vLLM-Omni upstream refuses a ``playback.ack`` with.
ACK_REFUSALS = frozenset(
    {"playback_ack_too_late", "playback_item_not_found", "playback_item_mismatch"}
)
# vLLM-Omni's words when it names the response an ack was for (its
# ``engine/duplex/session/playback_ledger.py``).
_NAMED_RESPONSE = re.compile(r"registered for (\S+?)\.?$")
_TRUNCATE_REFUSAL = "conversation.item.truncate "


class InFlight:
    """An ack (or truncate) sent upstream whose answer is still to come."""

    __slots__ = ("item_id", "maybe_unsent", "ms", "own", "response_id", "truncate")

    def __init__(
        self, own: bool, truncate: bool, item_id: Any, ms: Any, rid: Any, maybe_unsent: bool = False
    ) -> None:
        self.own, self.truncate, self.item_id, self.ms = own, truncate, item_id, ms
        # Made while the upstream was lost: it may still sit in the edge's outbox.
        self.maybe_unsent = maybe_unsent
        if not (isinstance(rid, str) and rid) and isinstance(item_id, str):
            # vLLM-Omni's own reading of an ack without one (``apply_playback_ack``).
            rid = item_id.removeprefix("item_") if item_id.startswith("item_") else None
        self.response_id = rid if isinstance(rid, str) and rid else None

    def to_wire(self) -> list[Any]:
        return [self.own, self.truncate, self.item_id, self.ms, self.response_id, self.maybe_unsent]

    @classmethod
    def from_wire(cls, raw: list[Any]) -> InFlight | None:
        if len(raw) not in (5, 6) or not all(isinstance(f, bool) for f in raw[:2] + raw[5:]):
            return None
        return cls(*raw)

    def as_ack(self) -> dict[str, Any]:
        ack: dict[str, Any] = {"type": "playback.ack", "played_ms": self.ms}
        if self.item_id is not None:
            ack["item_id"] = self.item_id
        if self.response_id is not None:
            ack["response_id"] = self.response_id
        return ack

    def sent_as(self, ev: Mapping[str, Any]) -> bool:
        """``ev`` (an ack or truncate as it went upstream) is this one."""
        if ev.get("type") == "conversation.item.truncate":
            ms, item_id = ev.get("audio_end_ms"), ev.get("item_id")
        else:
            ms, item_id, rid = ev.get("played_ms"), ev.get("item_id"), ev.get("response_id")
            if not (isinstance(item_id, str) and item_id):
                item_id = f"item_{rid}" if isinstance(rid, str) and rid else None
        ms = int(ms) if isinstance(ms, int | float) else ms
        truncate = ev.get("type") == "conversation.item.truncate"
        return (self.truncate, self.item_id, self.ms) == (truncate, item_id, ms)


class PlaybackReporter:
    def __init__(self) -> None:
        self.client_acks = False  # the client acks itself
        self.proxy_acked = False  # the proxy has sent an ack to this upstream session
        self.upstream_audio_ms = 0.0  # the current response's audio as the upstream sent it
        self.end_reported = False  # its end was reported (or needs no report)
        # The acks (and truncates) in flight upstream, in the order they went.
        self._in_flight: deque[InFlight] = deque(maxlen=OWN_ACKS_KEPT)
        self._earlier_items: set[str] = set()
        self._lost = False  # the upstream socket is gone: what is sent waits in the outbox

    def _sent(self, sent: InFlight) -> None:
        sent.maybe_unsent = self._lost
        self._in_flight.append(sent)

    def upstream_lost(self) -> None:
        """Reports from now on wait in the edge's outbox until the upstream is back:
        a snapshot meanwhile cannot tell whether they will ever be sent."""
        self._lost = True

    def upstream_back(self) -> None:
        """The outbox went out on the new socket (what it dropped: ``unsent``)."""
        self._lost = False
        for sent in self._in_flight:
            sent.maybe_unsent = False

    def new_response(self) -> None:
        self.upstream_audio_ms, self.end_reported = 0.0, False

    @property
    def acks_decide_turns(self) -> bool:
        return self.proxy_acked or self.client_acks

    def heard_ack(self, item_id: str, response_id: str, played: int) -> dict[str, Any]:
        """The proxy's own ``playback.ack`` of what was heard."""
        self.proxy_acked = True
        self._sent(InFlight(True, False, item_id, played, response_id))
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
        """The client's ``playback.ack`` goes upstream: its answer is the client's.
        Its item as the upstream names it in the answer: the ack's, else
        ``item_<response_id>``; None if neither (the upstream picks one)."""
        item_id, rid = ev.get("item_id"), ev.get("response_id")
        if not (isinstance(item_id, str) and item_id):
            item_id = f"item_{rid}" if isinstance(rid, str) and rid else None
        ms = int(played) if isinstance(played, int | float) else played
        self._sent(InFlight(False, False, item_id, ms, rid))

    def truncate_sent(self, ev: Mapping[str, Any], own: bool) -> None:
        """A ``conversation.item.truncate`` goes upstream; ``own``: the proxy already
        answered it, so none of the upstream's answers to it are the client's."""
        end = ev.get("audio_end_ms")
        ms = int(end) if isinstance(end, int | float) else end
        self._sent(InFlight(own, True, ev.get("item_id"), ms, None))

    def new_upstream_session(self, earlier_items: Iterable[str] = ()) -> None:
        """A fresh upstream session answers none of the acks sent to the last one,
        and knows none of its items (``earlier_items``, the ones played so far)."""
        self.proxy_acked, self._lost = False, False
        self._in_flight.clear()
        self._earlier_items = set(earlier_items)

    def client_acks_unsent(self) -> list[dict[str, Any]]:
        """The client's acks made while the upstream was lost: the edge gives a fresh
        upstream session none of the outbox's reports (``proxy/emulated/upstream_control.py``),
        yet vLLM-Omni answers every ack, so they go to the fresh session to be answered
        (it knows none of their items: ``playback_item_not_found``)."""
        return [
            s.as_ack() for s in self._in_flight if s.maybe_unsent and not s.own and not s.truncate
        ]

    def unsent(self, ev: Mapping[str, Any]) -> None:
        """An ack or truncate recorded in flight never reached the upstream (the edge
        dropped it during a redial): no answer will come, so it is no longer awaited
        (else a later answer would be matched to it)."""
        for i in range(len(self._in_flight) - 1, -1, -1):
            if self._in_flight[i].sent_as(ev):
                del self._in_flight[i]
                return

    def back(self, unsent: Iterable[Mapping[str, Any]]) -> None:
        """The upstream's own session is back; the outbox's ``unsent`` never reached it."""
        for ev in unsent:
            self.unsent(ev)
        self.upstream_back()

    def resent(self, acks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The client's ``acks`` (``client_acks_unsent``) sent again to a fresh session,
        in flight there: the acks to send."""
        for ack in acks:
            self.client_ack(ack, ack["played_ms"])
        return acks

    def before_this_session(self, item_id: str) -> bool:
        """The item came from an upstream session before the current one."""
        return item_id in self._earlier_items

    def answers_own_ack(self, ev: Mapping[str, Any]) -> bool:
        """A ``playback.acknowledged`` that answers an ack the proxy sent."""
        inner = ev.get("event")
        src: Mapping[str, Any] = inner if isinstance(inner, dict) else ev
        item_id, played = src.get("item_id"), src.get("played_ms")
        for i, sent in enumerate(self._in_flight):
            if sent.ms == played and sent.item_id in (None, item_id):
                return self._answered(i).own
        return False

    def refuses_own_ack(self, ev: Mapping[str, Any]) -> bool:
        """An ``error`` refusing an ack (or truncate) in flight that is the proxy's."""
        err = ev.get("error")
        if not isinstance(err, dict) or not self._in_flight:
            return False
        code, message = err.get("code"), str(err.get("message") or "")
        if code in ACK_REFUSALS:
            named = _NAMED_RESPONSE.search(message)
            if named is None:  # names no response: the oldest still unanswered
                return self._in_flight.popleft().own
            return self._refused(lambda sent: sent.response_id == named.group(1))
        item_id = native_unknown_item(err)
        if item_id is not None:
            return self._refused(lambda sent: sent.truncate and sent.item_id == item_id)
        if code == "bad_event" and message.startswith(_TRUNCATE_REFUSAL):
            return self._refused(lambda sent: sent.truncate)
        return False

    def _refused(self, which: Callable[[InFlight], bool]) -> bool:
        for i, sent in enumerate(self._in_flight):
            if which(sent):
                return self._answered(i).own
        return False  # none in flight: the client's

    def _answered(self, i: int) -> InFlight:
        """The ``i``-th in flight, answered; the ones before it were answered already
        (vLLM-Omni answers in order) in a way not recognised here."""
        for _ in range(i):
            self._in_flight.popleft()
        return self._in_flight.popleft()

    def state(self, audio_ms: float, playing: Any) -> PlaybackReports:
        in_flight = tuple(sent.to_wire() for sent in self._in_flight)
        return PlaybackReports(
            self.client_acks, self.proxy_acked, audio_ms, self.end_reported, playing, in_flight
        )

    def restore(self, reports: PlaybackReports) -> None:
        """Carry on with the same upstream session (its replay answers what is in
        flight, in order); not a report that may never have left the old owner's
        outbox (snapshot mid-redial): no answer to it would come."""
        self.client_acks = reports.client_acks
        self.proxy_acked = reports.proxy_acked
        self.upstream_audio_ms = reports.upstream_audio_ms
        self.end_reported = reports.end_reported
        self._in_flight.clear()
        for raw in reports.in_flight:
            if (sent := InFlight.from_wire(raw)) is not None and not sent.maybe_unsent:
                self._in_flight.append(sent)
