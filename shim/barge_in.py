"""Speech over the assistant's answer: when an overlap begins, and what it becomes.

While the assistant's audio plays, each VAD window is judged on its evidence
(``overlap_evidence.py``, ``overlap_decision.py``): two user-like windows in a row begin
an overlap (``overlap.py``), which holds the assistant's audio until it is decided: a
barge-in (the answer cancelled, the speech the user's turn), released (no interruption:
the answer goes on; a run judged someone else's stays theirs, after the answer too:
``background_run.py``), or the next turn if the answer ends under it. A hold ends in
time even if no more windows come (``overlap_hold.py``). The dialect cancels responses
its own way (``TurnHost.cancel_response``).
"""

from __future__ import annotations

from collections.abc import Sequence

from shim.actions import Action
from shim.answer_ahead import AnswerAhead
from shim.inputs import VadWindow
from shim.overlap import Cue, Episode, Step
from shim.overlap_decision import RELEASE_REASONS, DecisionParams, Judged, Tally, Verdict, judge
from shim.overlap_hold import HoldClock, carried, dismisses, opening_tally
from shim.overlap_onset import backstop_counts, user_run
from shim.settings import VAD_RATE
from shim.turn_host import TurnHost, told_paused, told_resumed, told_started
from shim.turn_params import TurnParams
from shim.vad_gate import WINDOW_MS, SpeechStopped
from shim.vad_runs import VadRuns


class BargeIn:
    def __init__(
        self, host: TurnHost, runs: VadRuns, recent: Sequence[Judged], params: TurnParams
    ) -> None:
        self._s = host
        self._runs = runs
        self._recent = recent  # the VAD's last windows, judged (kept by ``Turns``)
        self._params = params  # kept while the settings stay the same (``Turns``' own)
        self._run_user_ms = 0  # user-like speech over the assistant in the current run
        self._carry: Tally | None = None  # the last overlap released as a backchannel
        # The current run's overlap was released as someone else's (echo, background):
        # only speech at the user's own level begins another while the run goes on.
        self._dismissed = False
        self._lone = False  # the overlap began on one window: too little to dismiss a run
        self._clock = HoldClock()  # a hold ends in time even if no more windows come
        self._floor_ms = 0  # no overlap is told as begun before this input ms
        self.ahead = AnswerAhead()  # an answer begun ahead of the VAD's windows

    def _decision_params(self) -> DecisionParams:
        return self._params.decision(self._s.config, self._s.settings)

    # ------------------------------------------------------------ an answer under a turn
    def reached(self, win: VadWindow) -> list[Action]:
        """The VAD's window ``win`` comes: the speech over an answer begun ahead of the
        VAD's windows, once this window is the first to reach it (``answer_ahead.py``)."""
        at = self.ahead.reached(self._s.evidence, self._s.output.response, win.end_sample)
        return [] if at is None else self._over_answer(win.now_ms, at)

    def answer_began(self, now: float) -> list[Action]:
        """A new answer began under the user's turn (``Turns.answer_began``)."""
        at = self.ahead.began(self._s.evidence, self._s.output.response)
        return [] if at is None else self._over_answer(now, at)

    def _over_answer(self, now: float, at: int) -> list[Action]:
        s, td = self._s, self._s.config.turn
        speaking = self._runs.is_turn and s.gate.speaking and not s.overlap.holding
        if not (speaking and td.interrupt_response and td.vad is not None and self._recent):
            return []
        self._runs.is_turn, self._run_user_ms = False, 0
        self._floor_ms = at * 1000 // VAD_RATE
        p, level = self._decision_params(), s.evidence.user_level_db
        run = user_run(self._recent, self._dismissed, level, p)
        return self._hold(now, run) if run else []

    # ------------------------------------------------------------ the VAD's windows
    def heard(self, judged: Judged, params: DecisionParams) -> None:
        """A window goes into the held overlap's tally, if one is held."""
        episode = self._s.overlap.episode
        if self._s.overlap.holding and episode is not None:
            episode.tally.add(judged.kind, judged.ev, params)

    def window(
        self, win: VadWindow, judged: Judged, playing: bool, params: DecisionParams
    ) -> list[Action]:
        """After the window's speech events: the overlap it begins, or the held one decided."""
        s, ev = self._s, judged.ev
        overlapping = s.config.turn.interrupt_response and playing and not self._runs.is_turn
        user_level = s.evidence.user_level_db
        counts = overlapping and s.gate.speaking  # (then the window's class is read)
        if counts and backstop_counts(ev, judged.kind, self._dismissed, user_level, params):
            self._run_user_ms += WINDOW_MS
        begins = overlapping and not s.overlap.holding
        run = user_run(self._recent, self._dismissed, user_level, params) if begins else 0
        out = self._hold(win.now_ms, run) if run else []
        if not (s.overlap.holding and s.overlap.episode is not None):
            return out
        tally = s.overlap.episode.tally
        self._clock.heard(tally, ev.end_sample, win.now_ms)
        verdict = judge(tally, win.end_sample, params, user_level)
        enough = self._run_user_ms >= s.settings.min_barge_in_ms
        backstop = enough and not tally.background(user_level, params)
        cut = verdict is Verdict.BARGE_IN or backstop
        if cut and s.gate.speaking:  # over a run of the VAD's (its stop told), not a burst
            return out + self._barge_in(win.now_ms)
        if verdict is not Verdict.RELEASE:
            return out
        other = tally.main_other(user_level, params)
        self._carry = carried(tally, other, params)
        self._dismissed = s.gate.speaking and dismisses(tally, other, self._lone)
        self._runs.background.dismissed(self._dismissed, win.end_sample)
        return out + self.release(Cue.NOT_AN_INTERRUPTION, RELEASE_REASONS[other], win.now_ms)

    def run_began(self) -> None:
        """The VAD started a run: no user-like speech in it yet."""
        self._run_user_ms = 0

    def run_ended(self) -> None:
        """The VAD stopped the run: whatever of it was counted or dismissed is over."""
        self._run_user_ms, self._dismissed = 0, False

    def stopped(self, episode: Episode, ev: SpeechStopped, now: float) -> list[Action]:
        """The run stopped under the held overlap ``episode``, before it was decided: a
        backchannel (its start was never told, so neither is its end), unless the user's
        voice may yet come back as more of it: then the windows go on deciding (``judge``)."""
        p, end = self._decision_params(), ev.detected_ms * VAD_RATE // 1000
        if judge(episode.tally, end, p, self._s.evidence.user_level_db) is not Verdict.WAIT:
            return self.release(Cue.SPEECH_STOPPED, "backchannel", now)
        return []

    # ------------------------------------------------------------ the session's clock
    def tick(self, now: float) -> list[Action]:
        """A hold that ends in time; the answer ended under the speech over it."""
        s = self._s
        resp = s.output.response
        if s.overlap.episode is not None and not s.output.over(now, self.ahead.judged):
            if not s.gate.speaking:  # held on a window no speech run followed: nothing
                return self.release(Cue.SPEECH_STOPPED, "backchannel", now)
            return self._finished(now)
        expired = self._clock.expired(now, s.gate.speaking, s.settings.max_hold_ms)
        if s.overlap.holding and expired is not None:
            return self.release(*expired, now)
        if resp is not None and resp.held and resp.held_ms > s.settings.max_hold_ms:
            if s.overlap.holding:
                return self.release(Cue.HOLD_TOO_LONG, "hold_limit", now)
            return s.release_output(now)
        return []

    # ------------------------------------------------------------ an overlap's course
    def _hold(self, now: float, windows: int) -> list[Action]:
        """Begin an overlap at the first of the last ``windows`` (user-like): hold output."""
        s = self._s
        self._lone = windows == 1
        carry, self._carry = self._carry, None
        params = self._decision_params()
        tally = opening_tally(s.evidence, self._recent, windows, carry, params)
        onset_ms = tally.onset_sample * 1000 // VAD_RATE
        padding = (s.config.turn.vad or s.settings.vad).prefix_padding_ms
        start_ms = max(self._floor_ms, onset_ms - padding)
        step = s.overlap.begin(Episode(s.new_id("item"), start_ms, tally))
        self._clock.began(now)
        return told_paused(s, step, onset_ms)

    def release(self, cue: Cue, reason: str, now: float) -> list[Action]:
        """Not a barge-in: the held output goes on; the client never heard of it."""
        s = self._s
        step = s.overlap.decide(cue)
        self._run_user_ms = 0
        return told_resumed(s, step, reason) + s.overlap_ended(step, now) + s.release_output(now)

    def _finished(self, now: float) -> list[Action]:
        """The answer ended under the user's speech over it: the speech is the next turn."""
        step = self._s.overlap.decide(Cue.ASSISTANT_FINISHED)
        told = told_started(self._s, step)
        if told or self._s.announce_turns:  # else the upstream's turn: no speech_stopped
            self._becomes_turn(step)
        return told + self._s.overlap_ended(step, now)

    def _barge_in(self, now: float) -> list[Action]:
        s = self._s
        self._carry = None
        if not s.output.active(now) and s.output.heard(self.ahead.judged):  # it played out
            return self._finished(now)  # before the VAD judged the speech over it
        step = s.overlap.decide(Cue.BARGE_IN)
        out = told_started(s, step)
        resp = s.output.response
        if resp is not None and not resp.cancelled:
            out += s.cancel_response(now, reason="turn_detected")
        self._becomes_turn(step)
        self._runs.is_turn = True  # what follows in this run is the user's turn
        return out + s.overlap_ended(step, now)

    def _becomes_turn(self, step: Step) -> None:
        """The overlapping speech goes on as the user's turn."""
        runs = self._runs
        runs.item, runs.start_ms = step.episode.item_id, step.episode.onset_ms
        runs.background.end()
