"""How the barge-in relay (``duplex_relay.py``) relays the client's audio and
playback reports.

A native client's appends are heard as the upstream reads them. A client's
``playback.ack`` (or vLLM-Omni's alias ``audio.playback_ack``) goes upstream in the
upstream's own measure (``relay_client_acks.py``); a
``conversation.item.truncate`` goes up as it is when the upstream truncates items
itself, else as a ``playback.ack`` of what was heard. Each is recorded in flight
(``relay_reports.py``) so that the upstream's answer reaches whoever asked.

An item of an earlier upstream session (one the proxy replaced after losing it)
is unknown to the current one, which would only refuse it: the proxy's own answer
stands and nothing goes upstream.
"""

from __future__ import annotations

from typing import Any, Protocol

from shim import client_events, native_client
from shim.actions import Action, SendUpstream
from shim.dialects.relay_client_acks import in_upstream_measure
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_talk import Talk
from shim.output import ActiveResponse
from shim.playback import PlaybackLedger

# vLLM-Omni reads both names as one command (its ``engine/duplex/realtime_commands.py``).
ACK_NAMES = ("playback.ack", "audio.playback_ack")


class RelayClientHost(client_events.ClientEventHost, Protocol):
    """What the client-report handlers need of the relay session."""

    reports: PlaybackReporter
    ledger: PlaybackLedger
    talk: Talk  # the items the upstream has besides the assistant's (``others``)
    upstream_truncates: bool
    # The proxy answers the client's acks and truncates itself (a GA client's): the
    # upstream's answers to them are kept from the client.
    answers_reports: bool

    @property
    def response(self) -> ActiveResponse | None: ...


def audio(r: RelayClientHost, ev: dict[str, Any], now: float) -> list[Action]:
    """A native client's append: heard as the upstream reads it
    (``native_client.as_upstream_reads``), and sent there as it came."""
    heard = native_client.as_upstream_reads(ev, r.config.input_format)
    out = client_events.input_audio(r, heard, now, as_read=True)
    # One the proxy cannot read the upstream refuses itself, in its own words.
    return [SendUpstream(ev)] if client_events.is_refusal(out) else [SendUpstream(ev), *out]


def playback_ack(r: RelayClientHost, ev: dict[str, Any], now: float) -> list[Action]:
    far = client_events.ack_out_of_range(r, ev)
    if far is not None:
        return far  # the proxy's refusal, never the upstream's: it would not survive it
    out = client_events.playback_ack(r, ev, now)
    if client_events.is_refusal(out):
        # A native client's is refused there, in the upstream's words.
        return out if r.answers_reports else [SendUpstream(ev)]
    r.reports.client_acks = True
    item, upstream_ms = client_events.item_for(r, ev), r.reports.upstream_audio_ms
    ack = in_upstream_measure(ev, item, r.response, upstream_ms)
    r.reports.client_ack(ack, ack.get("played_ms"))
    return [SendUpstream(ack)]


def truncate(r: RelayClientHost, ev: dict[str, Any], now: float) -> list[Action]:
    out = client_events.truncate(r, ev, now, r.talk.others)
    item = r.ledger.get(str(ev.get("item_id")))
    if client_events.is_refusal(out) or item is None:
        return out
    if r.reports.before_this_session(item.item_id):
        return out
    # The upstream hears the cut the client was told: a truncate past the proxy's own
    # cut (a barge-in) tells that cut again, so it goes up at the cut, not beyond.
    cut = item.truncated_ms if item.truncated_ms is not None else int(ev["audio_end_ms"])
    if r.upstream_truncates:
        sent = {**ev, "audio_end_ms": cut}
        r.reports.truncate_sent(sent, own=r.answers_reports)  # answered at the cut
        return [*out, SendUpstream(sent)]
    # No truncate upstream: commit what was heard with a playback ack instead.
    return [*out, SendUpstream(r.reports.heard_ack(item.item_id, item.response_id, cut))]
