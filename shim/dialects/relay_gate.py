"""The microphone audio a duplex upstream hears while the assistant plays, for a GA client.

The upstream hears the microphone too, and its own rules on overlapping speech are not
a GA client's: under server VAD it barges in on any speech (the assistant's echo, a
backchannel), and under ``listen_only`` it keeps that speech as the next turn and
answers it (``docs/fidelity.md``, rows 1a and 4). So while the assistant's answer owns
the turn (it plays, or its end is not yet acknowledged upstream) or an overlap is
undecided, the proxy holds the client's audio back from the upstream. What goes on
once the gate opens is judged on the input timeline, not by when the audio arrived:

* a decided barge-in: the proxy has cut the answer upstream, then the held audio
  from the speech's onset goes on (the user's words, nothing lost);
* audio after the answer's end, as the client plays it, and its echo tail (the
  answer's end mapped onto the input timeline by ``relay_input_clock.py``): it goes
  on, in order, as it would have with the gate open; a run of speech that began
  before that end and goes on past it goes on from its onset. Where echo suppression
  locked onto the answer's echo, that end is no earlier than where the echo ends on
  the microphone's timeline (``note_echo``), plus the tail: a client that plays the
  answer later than estimated, or a room, delays its echo past a fixed tail;
* a turn the user spoke over the answer that does not interrupt it (GA
  ``interrupt_response: false``, ``relay_keep.py``): it goes on from its onset;
* anything else before that end (echo, a backchannel, noise, silence): dropped.

Whether a run of speech goes on past the answer's end is the VAD's to say, so held
audio is not judged before the VAD has heard it: a client sending faster than real
time (a turn sent at once after ``response.done``) is ahead of the VAD, and its
turn, over before the gate opened, is still a turn. Nor while the VAD has yet to
say whether a run begins before that end (the window across it still to come, or a
run begun before it not yet ``min_speech_ms`` long): a reply begun just before the
end goes on from its onset. That wait lasts no longer than the VAD's confirmation
takes in real time, so a client that stops sending, or stutters, leaves nothing
held. Appends are kept with their place on the input timeline (VAD-rate samples),
bounded.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.actions import Action, SendUpstream
from shim.dialects.relay_answer_clock import AnswerClock
from shim.dialects.relay_input_clock import InputClock
from shim.echo_run import ECHO_TAIL_MS
from shim.input_history import ms_to_sample
from shim.playback import ItemPlayback
from shim.settings import VAD_RATE
from shim.vad_gate import WINDOW_MS

# Audio kept at most while the gate is closed; an answer longer than this loses only
# the oldest audio, which is echo or silence unless a barge-in is decided on it.
KEEP_MS = 12_000
# Audio before a speech's onset that goes with it (the VAD's own padding is in onset).
PREFIX_MS = 100
WINDOW = ms_to_sample(WINDOW_MS)


class AudioGate:
    def __init__(self) -> None:
        # (start sample, end sample, append event) of held appends, oldest first.
        self.held: deque[tuple[int, int, dict[str, Any]]] = deque()
        self.clock = InputClock()  # the microphone, by when the edge read it
        self.answer = AnswerClock()  # the answer, by when the session sent it
        # Until when (ms, the playback clock) the answer or its echo may sound.
        self.answer_until_ms: float | None = None
        # Until when (ms, the same clock) the answer's echo may sound as the echo
        # suppressor finds it: the audio sent as placed on the microphone's timeline,
        # its locked delay later, then the tail (None: no estimate).
        self.echo_until_ms: float | None = None
        self._cut_item: str | None = None  # the last answer whose playback was cut
        # The VAD's reading of the input timeline (samples): how far it heard, the
        # current run of speech, where its last speech window ended.
        self._heard = 0
        self._speaking = False
        self._onset = 0
        self._speech_end = 0
        self._starting = False  # the current run's onset not yet confirmed, nor refused
        # Until when (ms) the gate waits on such an onset before the answer's end.
        self._wait_until: float | None = None
        # Decided for the answer's end at sample _decided_for: held audio from _from on.
        self._decided_for: int | None = None
        self._from = 0
        # The onset (input sample) of the first run of the user's speech over the answer
        # kept as a turn (``relay_keep.py``), until the held audio goes or is dropped.
        self.kept: int | None = None
        # Held audio before this input sample is someone else's voice, still heard after
        # the answer (``shim/background_run.py``): it never goes on (the user's kept turn
        # aside).
        self._skip = 0

    def follow_answer(self, live: bool, latest: ItemPlayback | None, now: float) -> None:
        """Until when the answer, as the client plays it, or its echo may sound: while
        its response is ``live`` it owns the turn; then its audio's playback clock
        (``latest``, the newest answer item), or where that playback was cut. All on
        the client's clock: when the session sent it (``relay_answer_clock.py``)."""
        now = self.answer.sent(now)
        if live:
            self.note_answer(now)
        if latest is None or latest.sent_samples == 0:
            return
        if latest.truncated_ms is None:
            self.note_answer(self.answer.play_end(latest) + ECHO_TAIL_MS)
        elif latest.item_id != self._cut_item:
            self._cut_item = latest.item_id  # its playback stopped now
            self.cap_answer(now + ECHO_TAIL_MS)

    def note_answer(self, until_ms: float) -> None:
        """The answer, or its echo, may sound until ``until_ms``."""
        if self.answer_until_ms is None or until_ms > self.answer_until_ms:
            self.answer_until_ms = until_ms

    def cap_answer(self, until_ms: float) -> None:
        """The client's playback was cut: nothing of the answer sounds after ``until_ms``."""
        if self.answer_until_ms is not None and until_ms < self.answer_until_ms:
            self.answer_until_ms = until_ms
        if self.echo_until_ms is not None and until_ms < self.echo_until_ms:
            self.echo_until_ms = until_ms

    def note_echo(self, end: int, latest_ms: float) -> None:
        """The echo suppressor finds the answer's echo ending at input sample ``end``
        (where the audio sent ends on the microphone's timeline, its delay later): it
        may sound until then, on this clock, no later than ``latest_ms``, plus the tail."""
        until = min(self.clock.time_of(end), latest_ms) + ECHO_TAIL_MS
        if self.echo_until_ms is None or until > self.echo_until_ms:
            self.echo_until_ms = until
        self.note_answer(until)

    def answer_end(self) -> int:
        """The answer's end (its echo tail included) on the input timeline."""
        if self.answer_until_ms is None:
            return 0
        return self.clock.sample_at(self.answer_until_ms)

    def heard(
        self, end: int, speech: bool, speaking: bool, onset: int, min_speech: int, starting: bool
    ) -> None:
        """The VAD's window ending at input sample ``end``: ``speech`` in it, a run
        ``speaking`` (or ``starting``: not yet confirmed) since ``onset``. Past the
        answer's end by ``min_speech``, it decides whether a run goes on across that end."""
        self._heard, self._speaking, self._onset = end, speaking, onset
        self._starting = starting
        if speech:
            self._speech_end = end
        end_of_answer = self.answer_end()
        if self._decided_for != end_of_answer and end >= end_of_answer + min_speech:
            self._decide(end_of_answer)

    def judge(self, vad: bool, min_speech: int, slack: int, now: float) -> int | None:
        """Where the held audio that goes upstream begins (input sample), once known.

        ``vad``: the VAD hears the input (else the answer's end alone decides);
        ``slack``: input not yet in a full VAD window. None: wait for the VAD."""
        end_of_answer = self.answer_end()
        if not vad:
            return end_of_answer
        if self._decided_for == end_of_answer:
            return self._start()
        heard_all = bool(self.held) and self._heard + slack >= self.held[-1][1]
        if self._heard >= end_of_answer + min_speech or (
            heard_all
            and not self._speaking
            and not self._vad_unsure(end_of_answer, min_speech, slack, now)
        ):
            self._decide(end_of_answer)
            return self._start()
        return None

    def skip(self, upto: int) -> None:
        """Input before sample ``upto`` is someone else's voice: it does not go on."""
        self._skip = max(self._skip, upto)

    def _start(self) -> int:
        """Where the held audio that goes on begins: as decided, past someone else's
        voice, from the user's kept turn's onset if earlier."""
        start = max(self._from, self._skip)
        return start if self.kept is None else min(start, self.kept - ms_to_sample(PREFIX_MS))

    def _vad_unsure(self, end_of_answer: int, min_speech: int, slack: int, now: float) -> bool:
        """The VAD has yet to say whether a run begins before the answer's end: it has
        not heard up to that end, or a run it heard begin before it is not yet speech
        nor refused (``min_speech`` more audio says). The gate waits for it (else a
        reply begun just before that end loses its first words with the echo), no
        longer than that audio takes in real time from the first wait: a client that
        stopped sending, a stutter that starts again and again, leave nothing held."""
        unheard = self._heard < end_of_answer and self.held[-1][1] > self._heard
        starting = self._starting and self._onset < end_of_answer
        if not (unheard or starting):
            return False
        if self._wait_until is None:
            self._wait_until = now + (slack + min_speech) * 1000 / VAD_RATE
        return now < self._wait_until

    def waits_onset(self, now: float) -> bool:
        """The gate waits on the VAD for a run before the answer's end (``_vad_unsure``)."""
        return bool(self.held) and self._wait_until is not None and now < self._wait_until

    def keep(self, onset: int) -> None:
        """A run of the user's speech from ``onset`` is a turn of its own: held audio
        from there goes on once the gate opens, the answer's end or not."""
        if self.kept is None or onset < self.kept:
            self.kept = onset
            self._decided_for = None  # judged again with it

    def _decide(self, end_of_answer: int) -> None:
        goes_on = (
            self._speaking
            and self._onset < end_of_answer
            and self._speech_end >= end_of_answer + WINDOW
        )
        self._from = self._onset - ms_to_sample(PREFIX_MS) if goes_on else end_of_answer
        if self.kept is not None:
            self._from = min(self._from, self.kept - ms_to_sample(PREFIX_MS))
        self._decided_for, self._wait_until = end_of_answer, None

    def hold(self, start: int, end: int, ev: dict[str, Any]) -> None:
        self.held.append((start, end, ev))
        while self.held and end - self.held[0][1] > ms_to_sample(KEEP_MS):
            self.held.popleft()

    def settle(self, whole: bool = False) -> list[Action]:
        """The client ends its turn now: what is held goes on, in order, from where the
        gate judges it with what the VAD has heard so far (``whole``: all of it)."""
        if whole:
            return self.release_from(0)
        end_of_answer = self.answer_end()
        if self._decided_for != end_of_answer:
            self._decide(end_of_answer)
        return self.release_from(self._start())

    def release(self, onset_ms: int | None) -> list[Action]:
        """Send what was held from ``onset_ms`` (input time) on; drop the rest.
        None: drop everything."""
        if onset_ms is None:
            self.drop()
            return []
        return self.release_from(ms_to_sample(onset_ms - PREFIX_MS))

    def release_from(self, first: int) -> list[Action]:
        """Send what was held from input sample ``first`` on, in order; drop the rest."""
        held, self.held, self.kept = list(self.held), deque(), None
        self._wait_until = None
        # An append the resampler has not yet given samples for (start == end) is
        # part of whatever follows it.
        # Each with its place, which the upstream timeline records as it goes.
        return [
            SendUpstream(ev, (s, e)) for s, e, ev in held if e > first or (s == e and s >= first)
        ]

    def drop(self) -> None:
        self.held.clear()
        self.kept, self._wait_until = None, None
