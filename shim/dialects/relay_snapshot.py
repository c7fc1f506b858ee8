"""The barge-in relay's part of the session snapshot, and its restore after a move."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from shim.actions import Action
from shim.assistant_audio import AssistantAudio
from shim.dialects.relay_kept_update import not_opened
from shim.dialects.relay_link import UpstreamLink
from shim.dialects.relay_own_updates import OwnUpdates
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_talk import Talk
from shim.output import ActiveResponse, response_state
from shim.playback import PlaybackLedger
from shim.session_config import ClientSessionConfig
from shim.snapshot import RelayState, ResponseState, SessionSnapshot, UpstreamState


class RelaySnapshotHost(Protocol):
    """What snapshot and restore need of the relay session (``duplex_relay.py``)."""

    link: UpstreamLink
    reports: PlaybackReporter
    talk: Talk
    cancelled_ids: deque[str]
    suppress_upstream_speech: bool
    own_updates: OwnUpdates
    native_client: bool
    last_update: dict[str, Any] | None
    config: ClientSessionConfig
    ledger: PlaybackLedger
    assistant_audio: AssistantAudio

    def kept_update(self) -> dict[str, Any] | None: ...

    @property
    def response(self) -> ActiveResponse | None: ...

    def durable(self) -> tuple[int, float]: ...

    def output_held(self) -> bool: ...

    def open_response(self) -> ActiveResponse | None: ...

    def bind_upstream(self, event: Mapping[str, Any]) -> None: ...

    def new_response(self, response_id: str, item_id: str) -> ActiveResponse: ...

    def restore_state(self, snap: SessionSnapshot) -> list[Action]: ...


def relay_state(r: RelaySnapshotHost) -> RelayState:
    seq, audio_ms = r.durable()
    link = r.link
    return RelayState(
        upstream_update=r.kept_update(),
        upstream=UpstreamState(link.id, link.token, seq) if link.id is not None else None,
        cancelled=tuple(r.cancelled_ids),
        history=tuple((iid, role, text) for iid, (role, text) in r.talk.items.items()),
        restoring=tuple(sorted(r.talk.restoring)),
        suppress_upstream_speech=r.suppress_upstream_speech,
        playback_reports=r.reports.state(audio_ms, _playing_out(r)),
        own_updates=r.own_updates.state(),
        resampler=_resampler(r),
    )


def _resampler(r: RelaySnapshotHost) -> dict[str, Any] | None:
    """What the client resampler holds of the open response, as of the move's position."""
    if r.open_response() is None:
        return None
    return r.assistant_audio.carry(r.output_held() and r.link.hold_mark is not None)


def _playing_out(r: RelaySnapshotHost) -> ResponseState | None:
    """A response generated in full whose playback end is still to report."""
    resp = r.response
    if resp is None or resp.cancelled or not resp.upstream_done:
        return None
    if r.reports.end_reported or r.link.held_open(r.output_held()):
        return None  # reported, or still open as of the hold mark
    return response_state(resp)


def restore(
    r: RelaySnapshotHost,
    state: SessionSnapshot,
    resumed: Mapping[str, Any] | None,
    now: float,
) -> list[Action]:
    relay = state.relay or RelayState()
    r.last_update = None  # the snapshot's is every update folded already
    r.last_update = relay.upstream_update
    r.cancelled_ids.extend(relay.cancelled)
    r.talk.restore(relay.history, relay.restoring)
    up = relay.upstream
    if resumed is None or up is None or not up.id or up.token is None:
        # A fresh upstream session, opened with the kept settings (``opening_session``
        # in ``shim/snapshot.py``): what an opening cannot set follows it.
        after = not_opened(relay.upstream_update)
        # Its answers to the opening and to these are the proxy's (``relay_own_updates.py``).
        return r.restore_state(state) + (r.own_updates.fresh(after) if r.native_client else after)
    r.suppress_upstream_speech = relay.suppress_upstream_speech
    r.reports.restore(relay.playback_reports)
    r.own_updates.restore(relay.own_updates)  # its replay answers them
    r.link.id, r.link.token, r.link.seq = up.id, up.token, up.seq
    r.link.acked = 0
    r.bind_upstream(resumed)
    out = r.restore_state(replace(state, open_response=None))
    playing = relay.playback_reports.playing
    if state.open_response is not None:
        _carry_on(r, state.open_response, now, upstream_done=False)
        r.assistant_audio.resume(relay.resampler)  # the upstream's replay goes on from it
    elif playing is not None:
        # Its end is reported at the next tick: a client that reconnected has
        # played what it had, as far as anyone can tell.
        _carry_on(r, playing, now, upstream_done=True)
    return out


def _carry_on(r: RelaySnapshotHost, taken: ResponseState, now: float, upstream_done: bool) -> None:
    """The response a snapshot was taken in, carried on after the move."""
    resp = r.new_response(taken.response_id, taken.item_id)
    resp.started_at_sample = 0
    resp.upstream_done = upstream_done
    sent_ms = float(taken.sent_ms)
    text = taken.transcript
    if sent_ms <= 0 and not text:
        return
    # What was sent before the move: the client is taken to have heard it (its
    # playback.ack, if it sends them, says better).
    rate = r.config.output_format.rate_hz
    pb = r.ledger.start(resp.item_id, resp.response_id, rate)
    pb.sent_samples = int(sent_ms * rate / 1000)
    pb.first_sent_ms, pb.play_end_ms = now - sent_ms, now
    pb.transcript = text
    if text:
        pb.marks.append((sent_ms, len(text)))
    resp.playback = pb
