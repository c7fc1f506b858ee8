"""Turn decisions from the VAD: user turns, and what speech over the assistant does.

Speech while nothing of the assistant's plays is a user turn, told at once (GA semantics)
and committed when it stops (where the proxy takes turns: ``announce_turns``). While the
assistant's audio plays, each VAD window is judged on its evidence (``overlap_evidence.py``,
``overlap_decision.py``): two user-like windows in a row begin an overlap (``overlap.py``),
which holds the assistant's audio until it is decided. Speech that is not user-like (echo,
distant voices, noise) holds nothing, and someone else's voice stays theirs after the answer
(``background_run.py``). The dialect commits turns and cancels responses its own way.
"""

from __future__ import annotations

from collections import deque

from shim import wire
from shim.actions import Action, SendClient
from shim.answer_ahead import AnswerAhead
from shim.background_run import BackgroundRun
from shim.echo_run import EchoRun
from shim.inputs import VadWindow
from shim.overlap import Cue, Episode, Step
from shim.overlap_decision import (
    HOLD_WINDOWS,
    RELEASE_REASONS,
    DecisionParams,
    Judged,
    Kind,
    Tally,
    Verdict,
    is_echo,
    judge,
)
from shim.overlap_hold import HoldClock, carried, dismisses, opening_tally
from shim.overlap_onset import backstop_counts, user_run
from shim.settings import VAD_RATE
from shim.turn_host import TurnHost, echo_span, far_at, told_paused, told_resumed, told_started
from shim.turn_params import TurnParams
from shim.vad_gate import WINDOW_MS, SpeechStarted, SpeechStopped

RECENT_KEPT = 8


class Turns:
    def __init__(self, host: TurnHost) -> None:
        self._s = host
        self.item: str | None = None  # user item of the turn in progress
        self.start_ms = 0
        self._recent: deque[Judged] = deque(maxlen=RECENT_KEPT)
        self.run_is_turn = False  # the VAD's current speech run began as a user turn
        self._run_user_ms = 0  # user-like speech over the assistant in the current run
        self._carry: Tally | None = None  # the last overlap released as a backchannel
        # The current run's overlap was released as someone else's (echo, background):
        # only speech at the user's own level begins another while the run goes on.
        self._dismissed = False
        self._lone = False  # the overlap began on one window: too little to dismiss a run
        self._clock = HoldClock()  # a hold ends in time even if no more windows come
        self.echo_run = EchoRun()  # speech judged echo over the answer's end (echo_run.py)
        self._params = TurnParams()  # kept while the settings stay the same
        self._floor_ms = 0  # no overlap is told as begun before this input ms
        self._ahead = AnswerAhead()  # an answer begun ahead of the VAD's windows
        self.background = BackgroundRun()  # someone else's speech after the answer

    @property
    def in_progress(self) -> bool:
        """A turn, an overlap or a run that may yet be one is under way (keep its audio)."""
        return self.item is not None or self._s.overlap.episode is not None or self.echo_run.pending

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
        at = self._ahead.reached(s.evidence, s.output.response, win.end_sample)
        ahead = [] if at is None else self._over_answer(win.now_ms, at)
        params = self.decision_params()
        # Not audio from before an answer the VAD has yet to reach (``answer_ahead.py``).
        over = s.output.over(win.now_ms, win.end_sample)
        playing = over and not self._ahead.pending
        self.echo_run.follow(playing, s.history.end + s.evidence.latency)
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
        episode = s.overlap.episode
        if s.overlap.holding and episode is not None:
            episode.tally.add(judged.kind, ev, params)
        want = self._params.gate(td.vad, s.settings, td.interrupt_response and playing)
        if s.gate.params != want:
            s.gate.update(want)
        out: list[Action] = ahead
        for event in s.gate.push(win.prob, win.end_sample):
            if isinstance(event, SpeechStarted):
                out += self._speech_started(event, over)
            else:
                out += self._speech_stopped(event, win.now_ms)
        theirs = self.background.window(speech, s.gate.speaking, win.end_sample, s.settings)
        idle = self.item is None and s.overlap.episode is None and not self.run_is_turn
        if idle and theirs and not playing:  # someone else's run after the answer
            voice = self.background.user_voice(self._recent, s.evidence, params, s.gate.speaking)
            out += [] if voice is None else self._turn_starts(voice)
        elif idle:
            speaking, ms = s.gate.speaking and speech, td.vad.min_speech_ms
            onset = self.echo_run.window(playing, is_echo(ev, params), speaking, win.end_sample, ms)
            out += self._turn_starts(onset) if onset is not None else []
        overlapping = td.interrupt_response and playing and not self.run_is_turn
        user_level = s.evidence.user_level_db
        counts = overlapping and s.gate.speaking  # (then the window's class is read)
        if counts and backstop_counts(ev, judged.kind, self._dismissed, user_level, params):
            self._run_user_ms += WINDOW_MS
        begins = overlapping and not s.overlap.holding
        run = user_run(self._recent, self._dismissed, user_level, params) if begins else 0
        if run:
            out += self._hold(win.now_ms, run)
        if s.overlap.holding and s.overlap.episode is not None:
            tally = s.overlap.episode.tally
            self._clock.heard(tally, ev.end_sample, win.now_ms)
            verdict = judge(tally, win.end_sample, params, user_level)
            backstop = self._run_user_ms >= s.settings.min_barge_in_ms
            backstop = backstop and not tally.background(user_level, params)
            cut = verdict is Verdict.BARGE_IN or backstop
            if cut and s.gate.speaking:  # over a run of the VAD's (its stop told), not a burst
                out += self._barge_in(win.now_ms)
            elif verdict is Verdict.RELEASE:
                other = tally.main_other(user_level, params)
                self._carry = carried(tally, other, params)
                self._dismissed = s.gate.speaking and dismisses(tally, other, self._lone)
                self.background.dismissed(self._dismissed, win.end_sample)
                out += self._release(Cue.NOT_AN_INTERRUPTION, RELEASE_REASONS[other], win.now_ms)
        return out

    def on_tick(self, now: float) -> list[Action]:
        s = self._s
        resp = s.output.response
        self.echo_run.follow(s.output.active(now), s.history.end + s.evidence.latency)
        if s.overlap.episode is not None and not s.output.over(now, self._ahead.judged):
            if not s.gate.speaking:  # held on a window no speech run followed: nothing
                return self._release(Cue.SPEECH_STOPPED, "backchannel", now)
            return self._finished(now)
        expired = self._clock.expired(now, s.gate.speaking, s.settings.max_hold_ms)
        if s.overlap.holding and expired is not None:
            return self._release(*expired, now)
        if resp is not None and resp.held and resp.held_ms > s.settings.max_hold_ms:
            if s.overlap.holding:
                return self._release(Cue.HOLD_TOO_LONG, "hold_limit", now)
            return s.release_output(now)
        return []

    def cleared(self, now: float) -> list[Action]:
        """The client cleared its input: no turn, no overlap in progress (held output goes on)."""
        self.item = None
        self.echo_run.end()
        self.background.end()
        if not self._s.overlap.holding:
            return []
        return self._release(Cue.INPUT_CLEARED, "input_cleared", now)

    def answer_began(self, now: float) -> list[Action]:
        """A new answer began while the user's turn goes on (an upstream that takes turns
        committed a pause of it): the rest is speech over that answer, an overlap like any other
        (held from the answer's start if the voice is heard now, else once it comes back in
        this run), told, if at all, after the turn's end. Only from the answer's start on:
        audio the VAD has still to judge before it is the turn being answered (answer_ahead.py)."""
        at = self._ahead.began(self._s.evidence, self._s.output.response)
        return [] if at is None else self._over_answer(now, at)

    def _over_answer(self, now: float, at: int) -> list[Action]:
        s, td = self._s, self._s.config.turn
        speaking = self.run_is_turn and s.gate.speaking and not s.overlap.holding
        if not (speaking and td.interrupt_response and td.vad is not None and self._recent):
            return []
        self.run_is_turn, self._run_user_ms = False, 0
        self._floor_ms = at * 1000 // VAD_RATE
        p, level = self.decision_params(), s.evidence.user_level_db
        run = user_run(self._recent, self._dismissed, level, p)
        return self._hold(now, run) if run else []

    def detection_changed(self, now: float) -> list[Action]:
        """Turn detection turned off (push-to-talk): a held overlap is no interruption."""
        if self._s.config.turn.vad is not None or not self._s.overlap.holding:
            return []
        return self._release(Cue.NOT_AN_INTERRUPTION, "turn_detection_off", now)

    # ------------------------------------------------------------ overlaps
    def _hold(self, now: float, windows: int = HOLD_WINDOWS) -> list[Action]:
        """Begin an overlap at the first of the last ``windows`` (user-like): hold output."""
        s = self._s
        self._lone = windows == 1
        carry, self._carry = self._carry, None
        params = self.decision_params()
        tally = opening_tally(s.evidence, self._recent, windows, carry, params)
        onset_ms = tally.onset_sample * 1000 // VAD_RATE
        padding = (s.config.turn.vad or s.settings.vad).prefix_padding_ms
        start_ms = max(self._floor_ms, onset_ms - padding)
        step = s.overlap.begin(Episode(s.new_id("item"), start_ms, tally))
        self._clock.began(now)
        return told_paused(s, step, onset_ms)

    def _release(self, cue: Cue, reason: str, now: float) -> list[Action]:
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
        if not s.output.active(now) and s.output.heard(self._ahead.judged):  # it played out
            return self._finished(now)  # before the VAD judged the speech over it
        step = s.overlap.decide(Cue.BARGE_IN)
        out = told_started(s, step)
        resp = s.output.response
        if resp is not None and not resp.cancelled:
            out += s.cancel_response(now, reason="turn_detected")
        self._becomes_turn(step)
        self.run_is_turn = True  # what follows in this run is the user's turn
        return out + s.overlap_ended(step, now)

    def _becomes_turn(self, step: Step) -> None:
        """The overlapping speech goes on as the user's turn."""
        self.item, self.start_ms = step.episode.item_id, step.episode.onset_ms
        self.background.end()

    # ------------------------------------------------------------ the VAD's runs
    def _speech_started(self, ev: SpeechStarted, over: bool) -> list[Action]:
        s = self._s
        resp = s.output.response
        onset = ev.audio_start_ms * VAD_RATE // 1000
        after_start = resp is None or onset >= resp.started_at_sample
        self._run_user_ms = 0
        if self.item is not None:  # decided a barge-in on its first windows: told already
            self.run_is_turn = True
            return []
        over = s.config.turn.interrupt_response and after_start and over
        if over or self.background.active:
            # Over the assistant, or someone else's voice after it: the windows decide (on_vad).
            self.run_is_turn = False
            self.echo_run.begin(ev)
            return []
        return self._turn_starts(ev)

    def _turn_starts(self, ev: SpeechStarted) -> list[Action]:
        """The run is the user's turn from its onset, told at once (GA semantics): it began
        with nothing playing, outlasted the answer it was judged the echo of, or is the
        user's own voice in someone else's run after the answer (``background_run.py``)."""
        s = self._s
        self.run_is_turn = True
        self.echo_run.end()
        if not s.announce_turns or s.overlap.episode is not None:
            return []
        item_id = s.new_id("item")
        self.item, self.start_ms = item_id, s.gate.padded_start_ms(ev)
        return [SendClient(wire.speech_started(item_id, self.start_ms))]

    def _speech_stopped(self, ev: SpeechStopped, now: float) -> list[Action]:
        s = self._s
        self.run_is_turn, self._run_user_ms, self._dismissed = False, 0, False
        self.echo_run.end()
        episode = s.overlap.episode
        if s.overlap.holding and episode is not None:
            # Overlapping speech that ended before it was decided: a backchannel (its
            # start was never told, so neither is its end), unless the user's voice may
            # yet come back as more of it: then the windows go on deciding (``judge``).
            p, end = self.decision_params(), ev.detected_ms * VAD_RATE // 1000
            if judge(episode.tally, end, p, s.evidence.user_level_db) is not Verdict.WAIT:
                return self._release(Cue.SPEECH_STOPPED, "backchannel", now)
            return []
        if self.item is None:
            return []
        item_id = self.item
        out: list[Action] = [SendClient(wire.speech_stopped(item_id, ev.audio_end_ms))]
        out += s.commit_turn(item_id, self.start_ms, ev.audio_end_ms, now)
        self.item = None
        return out
