"""How the barge-in relay (``duplex_relay.py``) loses its upstream session and gets
one back.

When the upstream socket drops, the relay asks to reattach the upstream's own
session (``ResumeUpstream``), so the upstream replays what followed and the
response goes on; only when that fails does it end the response ``incomplete`` and
open a fresh session, which it gives the client's settings and the conversation so
far (``relay_talk.py``). ``session.replaced`` means another replica resumed it: this
one stands down.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from shim.actions import AbortUpstream, Action, SendClient, SendUpstream
from shim.dialects import relay_kept_update
from shim.dialects.relay_link import UpstreamLink
from shim.dialects.relay_own_updates import OwnUpdates
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_talk import Talk
from shim.inputs import UpstreamLost, UpstreamReattached
from shim.output import ActiveResponse
from shim.response_close import lost_response_done
from shim.upstream_timeline import UpstreamTimeline


class RelayLossHost(Protocol):
    """What losing and getting back the upstream needs of the relay session."""

    link: UpstreamLink
    reports: PlaybackReporter
    talk: Talk
    own_updates: OwnUpdates
    native_client: bool
    upstream_timeline: UpstreamTimeline

    @property
    def response(self) -> ActiveResponse | None: ...

    def bind_upstream(self, event: Mapping[str, Any]) -> None: ...

    def kept_update(self) -> dict[str, Any] | None: ...

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]: ...


def reattached(r: RelayLossHost, inp: UpstreamReattached) -> list[Action]:
    again = r.reports.client_acks_unsent()  # (taken before a fresh session clears them)
    r.bind_upstream(inp.event)
    r.upstream_timeline.reattached(inp.event)  # its own session's timeline goes on
    if inp.event.get("type") != "session.created":
        r.reports.back(inp.unsent)
        return r.own_updates.again()  # its own session back: it has the conversation
    return r.talk.give() + [SendUpstream(ack) for ack in r.reports.resent(again)]


def lost(r: RelayLossHost, inp: UpstreamLost) -> list[Action]:
    if r.link.replaced:
        return []  # standing down: the session carries on elsewhere
    r.reports.upstream_lost()
    if inp.resume:
        resume = r.link.try_resume()
        if resume is not None:
            return [resume]  # its own session back, if the upstream still has it
    r.link.forget()
    out: list[Action] = []
    resp = r.response
    if resp is not None and resp.producing:
        closing = r.cancel_response(inp.now_ms, reason="upstream_lost")
        # Say it as it is: the response did not finish; nothing goes upstream.
        for action in closing:
            if isinstance(action, SendUpstream):
                continue
            if isinstance(action, SendClient) and action.event["type"] == "response.done":
                action = lost_response_done(resp.response_id, action.event["response"]["output"])
            out.append(action)
    kept = r.kept_update()  # the client's settings: opened with, then given
    opening = relay_kept_update.opening(kept)
    out.append(AbortUpstream("upstream lost", redial=True, after_loss=True, opening=opening))
    given = relay_kept_update.given(kept)
    return out + (r.own_updates.fresh(given) if r.native_client else given)
