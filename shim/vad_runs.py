"""The VAD's speech runs as user turns: told when one starts, committed when it stops.

A run that begins while nothing of the assistant's plays is a user turn, told at once
(GA semantics) and committed when it stops (where the proxy takes turns:
``announce_turns``). A run over the assistant's answer is the overlap's to decide
(``shim/barge_in.py``); one judged the answer's echo over its end becomes a turn once it
outlasts it (``echo_run.py``); someone else's run after the answer stays theirs until the
user's own voice is heard in it (``background_run.py``). The dialect commits turns its
own way (``TurnHost.commit_turn``).
"""

from __future__ import annotations

from collections.abc import Sequence

from shim import wire
from shim.actions import Action, SendClient
from shim.background_run import BackgroundRun
from shim.echo_run import EchoRun
from shim.overlap_decision import DecisionParams, Judged, is_echo
from shim.settings import VAD_RATE
from shim.turn_host import TurnHost
from shim.vad_gate import SpeechStarted, SpeechStopped


class VadRuns:
    def __init__(self, host: TurnHost, recent: Sequence[Judged]) -> None:
        self._s = host
        self._recent = recent  # the VAD's last windows, judged (kept by ``Turns``)
        self.item: str | None = None  # user item of the turn in progress
        self.start_ms = 0
        self.is_turn = False  # the VAD's current speech run began as a user turn
        self.echo_run = EchoRun()  # speech judged echo over the answer's end (echo_run.py)
        self.background = BackgroundRun()  # someone else's speech after the answer

    def started(self, ev: SpeechStarted, over: bool) -> list[Action]:
        """The VAD started a run; ``over``: the assistant's answer plays under it."""
        s = self._s
        resp = s.output.response
        onset = ev.audio_start_ms * VAD_RATE // 1000
        after_start = resp is None or onset >= resp.started_at_sample
        if self.item is not None:  # decided a barge-in on its first windows: told already
            self.is_turn = True
            return []
        over = s.config.turn.interrupt_response and after_start and over
        if over or self.background.active:
            # Over the assistant, or someone else's voice after it: the windows decide.
            self.is_turn = False
            self.echo_run.begin(ev)
            return []
        return self.turn_starts(ev)

    def turn_starts(self, ev: SpeechStarted) -> list[Action]:
        """The run is the user's turn from its onset, told at once (GA semantics): it began
        with nothing playing, outlasted the answer it was judged the echo of, or is the
        user's own voice in someone else's run after the answer (``background_run.py``)."""
        s = self._s
        self.is_turn = True
        self.echo_run.end()
        if not s.announce_turns or s.overlap.episode is not None:
            return []
        item_id = s.new_id("item")
        self.item, self.start_ms = item_id, s.gate.padded_start_ms(ev)
        return [SendClient(wire.speech_started(item_id, self.start_ms))]

    def ended(self) -> None:
        """The VAD stopped the run."""
        self.is_turn = False
        self.echo_run.end()

    def committed(self, ev: SpeechStopped, now: float) -> list[Action]:
        """The user's turn in progress, if any, ends with the run: told and committed."""
        if self.item is None:
            return []
        item_id = self.item
        out: list[Action] = [SendClient(wire.speech_stopped(item_id, ev.audio_end_ms))]
        out += self._s.commit_turn(item_id, self.start_ms, ev.audio_end_ms, now)
        self.item = None
        return out

    def window(
        self,
        judged: Judged,
        speech: bool,
        playing: bool,
        end_sample: int,
        min_speech_ms: int,
        params: DecisionParams,
    ) -> list[Action]:
        """A VAD window (``speech``: the VAD calls it speech) in a run that is no turn and
        no overlap: the turn it begins, if the user's voice is heard in someone else's run
        after the answer, or a run judged echo outlasts the answer."""
        s = self._s
        theirs = self.background.window(speech, s.gate.speaking, end_sample, s.settings)
        if self.item is not None or s.overlap.episode is not None or self.is_turn:
            return []
        if theirs and not playing:  # someone else's run after the answer
            voice = self.background.user_voice(self._recent, s.evidence, params, s.gate.speaking)
            return [] if voice is None else self.turn_starts(voice)
        speaking = s.gate.speaking and speech
        echo = is_echo(judged.ev, params)
        onset = self.echo_run.window(playing, echo, speaking, end_sample, min_speech_ms)
        return [] if onset is None else self.turn_starts(onset)

    def end(self) -> None:
        """No turn in progress, no run that may yet be one (the client cleared its input)."""
        self.item = None
        self.echo_run.end()
        self.background.end()
