"""Turn decisions from the VAD: each window measured, judged, and handed on.

Each VAD window's evidence is measured (``overlap_evidence.py``) and judged
(``overlap_decision.py``); the VAD gate runs on its probability, with quicker onsets
while the assistant speaks (``turn_params.py``). What its runs are as user turns is
``vad_runs.py`` (speech started and stopped, the turn committed; a run judged echo or
someone else's after the answer); what speech over the assistant's answer is (an
overlap held, a barge-in, released) is ``barge_in.py``. The dialect commits turns and
cancels responses its own way (``turn_host.py``).
"""

from __future__ import annotations

from collections import deque

from shim.actions import Action
from shim.barge_in import BargeIn
from shim.inputs import VadWindow
from shim.overlap import Cue
from shim.overlap_decision import DecisionParams, Judged, Kind
from shim.turn_host import TurnHost, echo_span, far_at
from shim.turn_params import TurnParams
from shim.vad_gate import SpeechStarted, SpeechStopped
from shim.vad_runs import VadRuns

RECENT_KEPT = 8


class Turns:
    def __init__(self, host: TurnHost) -> None:
        self._s = host
        self._recent: deque[Judged] = deque(maxlen=RECENT_KEPT)
        self._params = TurnParams()  # kept while the settings stay the same
        self.runs = VadRuns(host, self._recent)
        self.barge_in = BargeIn(host, self.runs, self._recent, self._params)

    @property
    def in_progress(self) -> bool:
        """A turn, an overlap or a run that may yet be one is under way (keep its audio)."""
        runs = self.runs
        return runs.item is not None or self._s.overlap.episode is not None or runs.echo_run.pending

    def user_speaking(self) -> bool:
        """The user is speaking right now, as the overlap evidence judges it."""
        return self._s.gate.speaking and any(j.kind is Kind.USER for j in list(self._recent)[-3:])

    def decision_params(self) -> DecisionParams:
        return self._params.decision(self._s.config, self._s.settings)

    def on_vad(self, win: VadWindow) -> list[Action]:
        s = self._s
        td = s.config.turn
        if td.vad is None:
            return []
        out = self.barge_in.reached(win)
        params = self.decision_params()
        # Not audio from before an answer the VAD has yet to reach (``answer_ahead.py``).
        over = s.output.over(win.now_ms, win.end_sample)
        playing = over and not self.barge_in.ahead.pending
        self.runs.echo_run.follow(playing, s.history.end + s.evidence.latency)
        speech = win.prob >= td.vad.threshold  # decay measurable only for speech over the answer
        decay = playing and speech
        ev = s.evidence.measure(
            win.prob,
            win.end_sample,
            far_at(s, win.end_sample),
            decay,
            echo_span(s, win.end_sample) if decay else None,
        )
        judged = Judged(ev, s.evidence.user_level_db, params)  # classified when read
        if not playing and s.gate.speaking and speech and ev.kept:
            s.evidence.learn_user(ev)  # the user's own level, from turns with nothing playing
        self._recent.append(judged)
        self.barge_in.heard(judged, params)
        want = self._params.gate(td.vad, s.settings, td.interrupt_response and playing)
        if s.gate.params != want:
            s.gate.update(want)
        for event in s.gate.push(win.prob, win.end_sample):
            if isinstance(event, SpeechStarted):
                out += self._speech_started(event, over)
            else:
                out += self._speech_stopped(event, win.now_ms)
        min_speech_ms = td.vad.min_speech_ms
        out += self.runs.window(judged, speech, playing, win.end_sample, min_speech_ms, params)
        return out + self.barge_in.window(win, judged, playing, params)

    def _speech_started(self, ev: SpeechStarted, over: bool) -> list[Action]:
        self.barge_in.run_began()
        return self.runs.started(ev, over)

    def _speech_stopped(self, ev: SpeechStopped, now: float) -> list[Action]:
        self.runs.ended()
        self.barge_in.run_ended()
        episode = self._s.overlap.episode
        if self._s.overlap.holding and episode is not None:
            return self.barge_in.stopped(episode, ev, now)
        return self.runs.committed(ev, now)

    def on_tick(self, now: float) -> list[Action]:
        s = self._s
        self.runs.echo_run.follow(s.output.active(now), s.history.end + s.evidence.latency)
        return self.barge_in.tick(now)

    def cleared(self, now: float) -> list[Action]:
        """The client cleared its input: no turn, no overlap in progress (held output goes on)."""
        self.runs.end()
        if not self._s.overlap.holding:
            return []
        return self.barge_in.release(Cue.INPUT_CLEARED, "input_cleared", now)

    def answer_began(self, now: float) -> list[Action]:
        """A new answer began while the user's turn goes on (an upstream that takes turns
        committed a pause of it): the rest is speech over that answer, an overlap like any other
        (held from the answer's start if the voice is heard now, else once it comes back in
        this run), told, if at all, after the turn's end. Only from the answer's start on:
        audio the VAD has still to judge before it is the turn being answered (answer_ahead.py)."""
        return self.barge_in.answer_began(now)

    def detection_changed(self, now: float) -> list[Action]:
        """Turn detection turned off (push-to-talk): a held overlap is no interruption."""
        if self._s.config.turn.vad is not None or not self._s.overlap.holding:
            return []
        return self.barge_in.release(Cue.NOT_AN_INTERRUPTION, "turn_detection_off", now)
