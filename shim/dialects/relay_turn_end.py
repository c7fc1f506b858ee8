"""What must reach a duplex upstream before a GA client's own commit or clear.

A GA client may end its turn itself: push-to-talk (turn detection off), or a
commit of its own under server VAD. It may do so while the relay still holds
microphone audio back from the upstream (``relay_gate.py``) and before the
answer's end was acknowledged upstream. Relayed as it came, the commit would
overtake the held audio (the upstream commits an empty or partial buffer), and an
upstream whose answer is still in progress only acknowledges a commit: it drops a
short one as an interjection and answers a long one only once the answer is acked
(``docs/fidelity.md``, row 1a). A GA client's buffer is everything it appended and
an answer it did not truncate was heard, so ahead of its commit go, under
push-to-talk, the proxy's ack of the answer in full unless its end was told
already (``relay_turn_wait.py``, which also holds back a commit made while the
answer is still generated), then all the held audio; under server VAD the held
audio as the gate judges it now (from the speech's onset while an overlap is undecided); ahead
of its clear, the held audio is dropped (the client emptied its buffer).
"""

from __future__ import annotations

from typing import Protocol

from shim.actions import Action, SendUpstream
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_turn_wait import TurnWait
from shim.output import ActiveResponse
from shim.overlap import OverlapMachine

COMMIT = "input_audio_buffer.commit"
CLEAR = "input_audio_buffer.clear"


class TurnEndHost(Protocol):
    audio_gate: AudioGate
    reports: PlaybackReporter
    overlap: OverlapMachine
    turn_wait: TurnWait

    @property
    def response(self) -> ActiveResponse | None: ...


def ahead_of(host: TurnEndHost, kind: object, whole: bool) -> list[Action]:
    """What goes upstream before the client's ``kind`` of event (nothing for others);
    ``whole``: all the held audio goes (push-to-talk), else from where the gate judges."""
    if kind == CLEAR:
        host.audio_gate.drop()
        return []
    if kind != COMMIT:
        return []
    episode = host.overlap.episode
    if host.overlap.holding and episode is not None:
        # Speech over the answer, undecided: the client ends its turn with it, so the
        # user's words go from their onset (the overlap decides the answer's fate).
        return host.audio_gate.release(episode.onset_ms)
    # Under push-to-talk, the answer's end first: audio the upstream gets over an answer
    # still in progress is an overlap to it. Under server VAD the answer's end is the
    # barge-in decision's to report (a later cut must still say what was heard).
    over = _answer_over(host) if whole else []
    return [*over, *host.audio_gate.settle(whole)]


def answer_unreported(host: TurnEndHost) -> bool:
    """The upstream's answer is in progress to it: its end is not acknowledged yet."""
    resp, reports = host.response, host.reports
    return (
        resp is not None
        and not resp.cancelled
        and not reports.end_reported
        and not reports.client_acks
    )


def _answer_over(host: TurnEndHost) -> list[Action]:
    """The proxy's ack of a generated answer whose end the upstream has not been told."""
    resp, reports = host.response, host.reports
    if resp is None or not resp.upstream_done or not answer_unreported(host):
        return []
    if host.turn_wait.stopped == resp.response_id:
        return []  # it ended it itself (the client's cancel), or was told it stopped
    if resp.playback is not None and resp.playback.truncated_ms is not None:
        return []  # the client cut it: its truncate said what was heard
    played = reports.played_in_full()
    if played is None:
        return []
    return [SendUpstream(reports.heard_ack(resp.item_id, resp.response_id, played))]
