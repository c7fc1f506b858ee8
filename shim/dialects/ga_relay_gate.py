"""The GA relay's microphone gate, as the session drives it (``relay_gate.py`` judges).

While the answer owns the turn (it plays, its echo tail may sound, or its end is not
yet acknowledged upstream) or an overlap is undecided, the client's appends are held
back from the upstream; they go on, or are dropped, once the gate opens, as the gate
judges them on the input timeline with what the VAD has heard. ``GaRelaySession``
(``ga_relay.py``) is this plus the GA client's words.
"""

from __future__ import annotations

from typing import Any

from shim import client_events
from shim.actions import Action, SendUpstream
from shim.dialects import relay_keep
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.relay_gate import WINDOW, AudioGate
from shim.dialects.relay_input_clock import PAUSE_MS
from shim.dialects.relay_turn_end import answer_unreported
from shim.dialects.relay_turn_wait import TurnWait
from shim.echo_run import ECHO_TAIL_MS
from shim.input_history import ms_to_sample
from shim.inputs import ClientEvent, Input, VadWindow
from shim.overlap import Overlap, Step


class GatedRelaySession(BargeInRelaySession):
    audio_gate: AudioGate
    turn_wait: TurnWait
    _read_ms: float | None = None  # when the edge read the client event being handled

    def handle(self, inp: Input) -> list[Action]:
        # The gate's clocks: the client's audio by when the edge read it, the answer's
        # by when it goes out (``relay_answer_clock.py``).
        self.audio_gate.answer.handled(inp.now_ms)
        self._read_ms = inp.arrived_ms if isinstance(inp, ClientEvent) else None
        actions = super().handle(inp)
        self.audio_gate.answer.follow(actions, inp.now_ms)
        return actions

    def _client_audio(self, ev: dict[str, Any], now: float) -> list[Action]:
        start = self.history.end
        out = client_events.input_audio(self, ev, now)
        if client_events.is_refusal(out):
            return out
        # When its audio came: a session behind handles it later than that.
        read = now if self._read_ms is None else min(self._read_ms, now)
        self.audio_gate.clock.on_audio(start, read)
        if not self.turn_wait.pending and (self.audio_gate.held or self._gated(now, read)):
            # Behind held audio still to be judged, in order.
            self.audio_gate.hold(start, self.history.end, ev)
            return [*self._gate_opens(now), *out]
        return [SendUpstream(ev, (start, self.history.end)), *out]  # (behind a waiting commit)

    def _gated(self, now: float, heard_ms: float | None = None) -> bool:
        """The upstream must not hear the microphone now (``relay_gate.py``), nor audio
        the client captured at ``heard_ms``, within the answer's echo tail."""
        in_progress = answer_unreported(self)
        if self._push_to_talk():
            return in_progress
        if in_progress or self.overlap.holding or self.output.active(now):
            return True
        if self.turns.runs.background.active:
            return True  # someone else's voice goes on after the answer (background_run.py)
        latest = self.ledger.latest()
        at = now if heard_ms is None else heard_ms
        if latest is None or latest.truncated_ms is not None:
            return False
        echo_until = self.audio_gate.echo_until_ms
        if echo_until is not None and at < echo_until:
            return True  # where the echo suppressor finds the echo, and its tail
        return at < self.audio_gate.answer.play_end(latest) + ECHO_TAIL_MS

    def _gate_opens(self, now: float) -> list[Action]:
        """The upstream may hear the microphone again: what was held goes on from where
        the gate judges it (``relay_gate.py``), once the VAD has heard enough of it."""
        self._follow_answer(now)
        if not self.audio_gate.held or self._gated(now):
            return []
        if self._push_to_talk():
            return self.audio_gate.settle(whole=True)
        vad = self.vad_enabled and self.config.turn.vad is not None
        slack = WINDOW + self.evidence.latency
        start = self.audio_gate.judge(vad, self._min_speech(), slack, now)
        return [] if start is None else self.audio_gate.release_from(start)

    def _push_to_talk(self) -> bool:
        """Turn detection off: the client's commits end turns, its buffer is all it
        appended; held only while the upstream's answer is in progress (to it, an
        interjection: ``docs/fidelity.md`` row 1a), then whole (``relay_turn_end.py``)."""
        return self.config.turn.vad is None and not self.overlap.holding

    def _min_speech(self) -> int:
        return ms_to_sample(self.gate.params.min_speech_ms)

    def _follow_answer(self, now: float) -> None:
        live = self.response is not None and self.response.live
        latest = self.ledger.latest()
        self.audio_gate.follow_answer(live, latest, now)
        # Where the answer's sound ends on the input timeline, as the gate judges held
        # audio (its echo tail aside): speech before it the VAD judges only after the
        # answer played out is still judged as over it (``Turns.on_vad``); else it is
        # neither decided the user's nor let past the gate, and the user's words are lost.
        gate = self.audio_gate
        tail = ms_to_sample(ECHO_TAIL_MS)
        self.output.heard_until = None if gate.answer_until_ms is None else gate.answer_end() - tail
        echo, clock = self.echo, self.audio_gate.clock
        # Where the suppressor finds the echo: the audio sent, placed on the
        # microphone's timeline, its locked delay later (then the tail), while the
        # microphone streams (its samples are time; after a pause they start again).
        # No later than the longest delay the suppressor looks for past the playback
        # end: a client that sends its audio faster than real time runs the
        # microphone's timeline ahead of the clock, and the echo's place with it.
        streaming = now - clock.time_of(self.history.end) < PAUSE_MS
        if echo is not None and streaming and latest is not None and latest.truncated_ms is None:
            delay = 0 if echo.delay is None else echo.delay
            reach_ms = echo.max_delay * 1000 / echo.rate_hz
            longest = self.audio_gate.answer.play_end(latest) + reach_ms
            self.audio_gate.note_echo(echo.far.loud_end + delay, longest)

    def _follow_gate(self, inp: Input) -> list[Action]:
        """After every input: the answer's end; and a VAD window's word on held audio."""
        self._follow_answer(inp.now_ms)
        if not isinstance(inp, VadWindow) or self.config.turn.vad is None:
            return []
        lag = self.evidence.latency  # the VAD's, behind the echo suppressor's
        end = self.vad_timeline.to_input(inp.end_sample)
        speaking = self.gate.speaking
        speech = speaking and inp.prob >= self.gate.params.deactivation
        onset = self.gate.onset_sample - lag
        relay_keep.follow(self, onset)  # GA interrupt_response false: speech is a turn
        background = self.turns.runs.background
        if background.user_onset is not None:  # the user's voice in someone else's run
            self.audio_gate.keep(end - lag - (inp.end_sample - background.user_onset))
            background.user_onset = None
        elif background.active:
            self.audio_gate.skip(end - lag)
        starting = self.gate.starting
        self.audio_gate.heard(end - lag, speech, speaking, onset, self._min_speech(), starting)
        return self._gate_opens(inp.now_ms) if self.audio_gate.held else []

    def overlap_ended(self, step: Step, now: float) -> list[Action]:
        out = super().overlap_ended(step, now)
        if step.outcome in (Overlap.CUT, Overlap.TURN):
            # After the cut went upstream (``cancel_response`` came first): the
            # user's words, from the speech's onset.
            out += self.audio_gate.release(step.episode.onset_ms)
        return out

    def on_tick(self, now: float) -> list[Action]:
        out = super().on_tick(now)
        if self.audio_gate.held and not self._gated(now):
            out += self._gate_opens(now)
        return out

    def wants_ticks(self, now: float) -> bool:
        resp = self.response
        unreported = (
            resp is not None
            and resp.upstream_done
            and not resp.cancelled
            and not self.reports.end_reported
        )  # its end is still to be acknowledged upstream (``on_tick``)
        # Held audio waits for the gate to open; once open, for the VAD (its windows).
        gated = bool(self.audio_gate.held) and self._gated(now)
        # ... or for an onset the VAD has yet to confirm, no longer than that takes.
        waits = self.audio_gate.waits_onset(now)
        return super().wants_ticks(now) or unreported or gated or waits
