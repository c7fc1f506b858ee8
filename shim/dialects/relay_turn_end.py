"""What must reach a duplex upstream before a GA client's own commit or clear.

A GA client may end its turn itself: push-to-talk (turn detection off), or a
commit of its own under server VAD. It may do so while the relay still holds
microphone audio back from the upstream (``relay_gate.py``) and before the
answer's end was acknowledged upstream. Relayed as it came, the commit would
overtake the held audio (the upstream commits an empty or partial buffer), and an
upstream whose answer is still in progress only acknowledges a commit: it drops a
short one as an interjection and answers a long one only once the answer is acked
(``docs/fidelity.md``, row 1a). A GA client's buffer is everything it appended and
an answer it did not truncate was heard, so ahead of its commit go the proxy's ack
of the answer in full and then the held audio (all of it under push-to-talk, else
judged now); ahead of its clear, the held audio is dropped (the client emptied its
buffer).
"""

from __future__ import annotations

from typing import Protocol

from shim.actions import Action, SendUpstream
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_reports import PlaybackReporter
from shim.output import ActiveResponse

COMMIT = "input_audio_buffer.commit"
CLEAR = "input_audio_buffer.clear"


class TurnEndHost(Protocol):
    audio_gate: AudioGate
    reports: PlaybackReporter

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
    # The ack first: audio the upstream gets over an answer still in progress is an
    # overlap to it.
    ack = _answer_heard(host)
    audio = host.audio_gate.settle(whole)
    return [ack, *audio] if ack is not None else audio


def answer_unreported(host: TurnEndHost) -> bool:
    """The upstream's answer is in progress to it: its end is not acknowledged yet."""
    resp, reports = host.response, host.reports
    return (
        resp is not None
        and not resp.cancelled
        and not reports.end_reported
        and not reports.client_acks
    )


def _answer_heard(host: TurnEndHost) -> SendUpstream | None:
    """The proxy's ack of a generated answer whose end the upstream has not been told."""
    resp, reports = host.response, host.reports
    if resp is None or not resp.upstream_done or not answer_unreported(host):
        return None
    played = reports.played_in_full()
    if played is None:
        return None
    return SendUpstream(reports.heard_ack(resp.item_id, resp.response_id, played))
