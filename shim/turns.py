"""Turn decisions from the VAD: user turns, and what speech over the assistant does.

Speech the VAD starts while the assistant's audio plays begins an overlap
(``shim/overlap.py``); other speech is a user turn, announced and committed when
it stops (where the proxy takes turns: ``announce_turns``). The dialect commits a
turn and cancels a response in its own way (``commit_turn``, ``cancel_response``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from shim import wire
from shim.actions import Action, SendClient
from shim.inputs import VadWindow
from shim.output import AssistantOutput
from shim.overlap import Cue, Episode, OverlapMachine, Step
from shim.session_config import ClientSessionConfig
from shim.settings import VAD_RATE, ShimSettings
from shim.vad_gate import WINDOW_MS, SpeechStarted, SpeechStopped, VadGate, VadParams


class TurnHost(Protocol):
    """What turn decisions need from the session, and the dialect's two moves."""

    config: ClientSessionConfig
    settings: ShimSettings
    gate: VadGate
    overlap: OverlapMachine
    output: AssistantOutput
    announce_turns: bool

    def new_id(self, prefix: str) -> str: ...

    def release_output(self, now: float) -> list[Action]: ...

    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]: ...

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]: ...


class Turns:
    def __init__(self, host: TurnHost) -> None:
        self._s = host
        self.item: str | None = None  # user item of the turn in progress
        self.start_ms = 0

    @property
    def in_progress(self) -> bool:
        """A user turn or an overlap is under way (its audio must be kept)."""
        return self.item is not None or self._s.overlap.episode is not None

    def on_vad(self, win: VadWindow) -> list[Action]:
        s = self._s
        td = s.config.turn
        if td.vad is None:
            return []
        out: list[Action] = []
        if win.prob >= td.vad.threshold:
            s.overlap.voiced(WINDOW_MS)
        self._tune_gate(td.vad, win.now_ms)
        for event in s.gate.push(win.prob, win.end_sample):
            if isinstance(event, SpeechStarted):
                out += self._speech_started(event, win.now_ms)
            else:
                out += self._speech_stopped(event, win.now_ms)
        ep = s.overlap.episode
        if ep is not None and ep.voiced_ms >= s.settings.min_barge_in_ms:
            out += self._barge_in(win.now_ms)
        return out

    def on_tick(self, now: float) -> list[Action]:
        s = self._s
        resp = s.output.response
        if s.overlap.episode is not None and not s.output.active(now):
            # The assistant finished while the user was talking over its last words:
            # the speech is simply the next turn.
            step = s.overlap.decide(Cue.ASSISTANT_FINISHED)
            self._becomes_turn(step)
            return _told(step)
        if resp is not None and resp.held and resp.held_ms > s.settings.max_hold_ms:
            if s.overlap.holding:
                s.overlap.decide(Cue.HOLD_TOO_LONG)
            return s.release_output(now)
        return []

    def cleared(self) -> None:
        """The client cleared its input buffer: no turn, no overlap, in progress."""
        self.item = None
        if self._s.overlap.holding:
            self._s.overlap.decide(Cue.INPUT_CLEARED)

    def _tune_gate(self, base: VadParams, now: float) -> None:
        """Quicker onsets while the assistant speaks (holds are cheap), else the turn's."""
        s = self._s
        want = base
        if s.config.turn.interrupt_response and s.output.active(now):
            want = replace(
                base, min_speech_ms=min(base.min_speech_ms, s.settings.hold_min_speech_ms)
            )
        if s.gate.params != want:
            s.gate.update(want)

    def _speech_started(self, ev: SpeechStarted, now: float) -> list[Action]:
        s = self._s
        start_ms = s.gate.padded_start_ms(ev)
        resp = s.output.response
        onset = ev.audio_start_ms * VAD_RATE // 1000
        after_start = resp is None or onset >= resp.started_at_sample
        overlap = s.config.turn.interrupt_response and after_start and s.output.active(now)
        if not overlap and not s.announce_turns:
            return []
        item_id = s.new_id("item")
        if overlap:
            voiced = max(0, ev.detected_ms - ev.audio_start_ms)
            return _told(s.overlap.begin(Episode(item_id, start_ms, voiced)))
        self.item, self.start_ms = item_id, start_ms
        return [SendClient(wire.speech_started(item_id, start_ms))]

    def _speech_stopped(self, ev: SpeechStopped, now: float) -> list[Action]:
        s = self._s
        if s.overlap.holding:
            # Overlapping speech that ended before it cut: a backchannel.
            step = s.overlap.decide(Cue.SPEECH_STOPPED)
            out: list[Action] = []
            if step.episode.told:
                out.append(SendClient(wire.speech_stopped(step.episode.item_id, ev.audio_end_ms)))
            return out + s.release_output(now)
        if self.item is None:
            return []
        item_id = self.item
        out = [SendClient(wire.speech_stopped(item_id, ev.audio_end_ms))]
        out += s.commit_turn(item_id, self.start_ms, ev.audio_end_ms, now)
        self.item = None
        return out

    def _barge_in(self, now: float) -> list[Action]:
        s = self._s
        step = s.overlap.decide(Cue.ENOUGH_SPEECH)
        out = _told(step)
        resp = s.output.response
        if resp is not None and not resp.cancelled:
            out += s.cancel_response(now, reason="turn_detected")
        self._becomes_turn(step)
        return out

    def _becomes_turn(self, step: Step) -> None:
        """The overlapping speech goes on as the user's turn."""
        self.item, self.start_ms = step.episode.item_id, step.episode.onset_ms


def _told(step: Step) -> list[Action]:
    """speech_started for the overlap's speech, if the table says now is the time."""
    if not step.tell_started:
        return []
    return [SendClient(wire.speech_started(step.episode.item_id, step.episode.onset_ms))]
