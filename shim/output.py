"""The assistant's output on its way to the client: send it, or hold and release it.

While an overlap is undecided (``shim/overlap.py``) the active response's output
is held, in order, instead of sent; a backchannel releases it, a barge-in drops
it. What is sent is recorded in the playback ledger (what the client may have
heard) and, for echo suppression, as far-end audio where it will play on the
microphone's timeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shim.actions import Action, SendClient, SendClientAudio
from shim.echo import EchoSuppressor
from shim.input_history import InputHistory
from shim.overlap import OverlapMachine
from shim.playback import ItemPlayback, PlaybackLedger
from shim.settings import VAD_RATE
from shim.snapshot import ResponseState


@dataclass
class ActiveResponse:
    response_id: str
    item_id: str
    playback: ItemPlayback | None = None
    upstream_done: bool = False
    cancelled: bool = False
    held: list[Action] = field(default_factory=list)
    held_ms: float = 0.0
    # Input audio time (16 kHz samples) when the response began: speech that started
    # before it is the user's own turn going on, not an interruption.
    started_at_sample: int = 0
    # The item before its own in the conversation, told in its item's added and done.
    previous_item_id: str | None = None

    @property
    def producing(self) -> bool:
        """The upstream is still producing it (it was neither cancelled nor done)."""
        return not self.cancelled and not self.upstream_done

    @property
    def live(self) -> bool:
        """The client has not had all of it yet: produced, or held back."""
        return not self.cancelled and (not self.upstream_done or bool(self.held))

    @property
    def told_done(self) -> bool:
        """Its response.done went out to the client: not cut short, and nothing held."""
        return not self.cancelled and self.upstream_done and not self.held

    def drop_held(self) -> None:
        self.held, self.held_ms = [], 0.0


class AssistantOutput:
    def __init__(
        self,
        ledger: PlaybackLedger,
        echo: EchoSuppressor | None,
        history: InputHistory,
        overlap: OverlapMachine,
    ) -> None:
        self.ledger = ledger
        self.echo = echo
        self._history = history
        self._overlap = overlap
        self.response: ActiveResponse | None = None
        # Where the answer's sound ends on the input timeline, for a dialect that maps it
        # there (the GA relay's gate, ``shim/dialects/ga_relay_gate.py``); else None.
        self.heard_until: int | None = None

    def start(self, response_id: str, item_id: str) -> ActiveResponse:
        self.response = ActiveResponse(response_id, item_id, started_at_sample=self._history.end)
        return self.response

    def active(self, now: float) -> bool:
        """The assistant is speaking: its response is live or its audio still plays."""
        if self.response is not None and self.response.live:
            return True
        return self.ledger.playing(now) is not None

    def heard(self, end_sample: int) -> bool:
        """The microphone's audio up to input sample ``end_sample`` was heard while the
        answer sounded, though it may have played out since (``heard_until``)."""
        return self.heard_until is not None and end_sample <= self.heard_until

    def over(self, now: float, end_sample: int) -> bool:
        """Audio up to ``end_sample`` is over the answer: it is active now, or that audio
        was heard while it sounded (judged later than what was left of it)."""
        return self.active(now) or self.heard(end_sample)

    def sounding(self, now: float) -> bool:
        """The assistant is heard: its response is live or its audio has not ended at
        the listener by the clock or the client's acks, whichever ends it first
        (``shim/playback.py``, ``played_out``): what GA's idle timeout waits for."""
        if self.response is not None and self.response.live:
            return True
        return self.ledger.sounding(now) is not None

    def needs_clock(self, now: float) -> bool:
        """Time alone can change something here: the assistant speaks or its audio plays
        by the clock (the ledger's, or its response's own), or held audio waits. Audio
        the client's acks say still plays, past the clock's end, changes only with the
        next ack: no ticks for it."""
        resp = self.response
        if resp is not None and (
            resp.held or (resp.playback is not None and not resp.playback.played_out(now))
        ):
            return True
        return self.sounding(now)

    def audio(self, action: SendClientAudio, now: float) -> list[Action]:
        """Send (or hold, during an undecided overlap) one assistant audio delta."""
        resp = self.response
        if resp is None or resp.cancelled:
            return []
        if self._overlap.holding:
            resp.held.append(action)
            resp.held_ms += action.n_samples * 1000.0 / action.rate_hz
            return []
        return [self._send_audio(resp, action, now)]

    def text(self, action: SendClient, delta: str, rate_hz: int) -> list[Action]:
        """Send (or hold) a transcript delta; the ledger learns it only once sent."""
        resp = self.response
        if resp is None or resp.cancelled:
            return []
        if self._overlap.holding:
            resp.held.append(action)
            return []
        self._note_text(resp, delta, rate_hz)
        return [action]

    def event(self, action: Action) -> list[Action]:
        """Send now, or keep in order behind held output while an overlap is undecided."""
        resp = self.response
        if self._overlap.holding and resp is not None and resp.held:
            resp.held.append(action)
            return []
        return [action]

    def release(self, now: float, rate_hz: int) -> list[Action]:
        """Send everything held, in order."""
        resp = self.response
        if resp is None or not resp.held:
            return []
        held = resp.held
        resp.drop_held()
        out: list[Action] = []
        for action in held:
            if isinstance(action, SendClientAudio):
                out.append(self._send_audio(resp, action, now))
                continue
            if isinstance(action, SendClient) and str(action.event.get("type", "")).endswith(
                "_transcript.delta"
            ):
                self._note_text(resp, str(action.event.get("delta") or ""), rate_hz)
            out.append(action)
        return out

    def _send_audio(
        self, resp: ActiveResponse, action: SendClientAudio, now: float
    ) -> SendClientAudio:
        if resp.playback is None:
            resp.playback = self.ledger.start(resp.item_id, resp.response_id, action.rate_hz)
        resp.playback.add_audio(action.n_samples, now)
        if self.echo is not None and action.far16 is not None:
            # Where this audio will sound in the mic timeline, if the client plays it
            # as soon as its buffer reaches it: on the send time, past the newest input
            # by what the client has captured and not yet sent (``shim/echo_clock.py``).
            clock, end = self.echo.far.clock, self._history.end
            sent = clock.sent(now)
            begin = clock.play(resp.item_id, sent, action.n_samples * 1000.0 / action.rate_hz)
            at = end + clock.lead(end, sent) + int((begin - sent) * VAD_RATE / 1000)
            self.echo.add_far(action.far16, max(0, at))
        return action

    def _note_text(self, resp: ActiveResponse, delta: str, rate_hz: int) -> None:
        if resp.playback is None and delta:
            resp.playback = self.ledger.start(resp.item_id, resp.response_id, rate_hz)
        if resp.playback is not None:
            resp.playback.add_text(delta)


def response_state(resp: ActiveResponse) -> ResponseState:
    """A response as a snapshot keeps it: ids, audio sent, transcript sent."""
    pb = resp.playback
    return ResponseState(
        resp.response_id,
        resp.item_id,
        int(pb.sent_ms) if pb else 0,
        pb.transcript if pb else "",
    )
