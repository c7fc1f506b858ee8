"""Speech over the answer's last moments that was judged its echo, judged again after it.

While the assistant's audio plays, a window that is coherent with what was sent, or
mostly removed by echo suppression, is its echo (``shim/overlap_decision.py``). But a
user who starts speaking just before the answer ends, in a voice like the answer's
(the same voice, for a model that answers in the user's own), is heard as that echo
too, and the run of speech the VAD started over the answer was never a turn: it was
lost whole, however long it went on after the answer. So such a run is judged again
once the answer, and its echo tail, are over on the input timeline:

* speech of the run past that point (``min_speech_ms`` of it, as any speech start
  needs) is the user's: the run is the user's turn, from its onset, so the turn's
  audio keeps what was said over the answer's end (``shim/vad_runs.py`` announces it
  then: outside assistant playback ``speech_started`` is immediate,
  ``docs/protocol.md``);
* echo that ends with the answer and its tail never is.

Where the answer ends on the input timeline: the newest microphone sample seen while
it still played (the playback clock, ``shim/playback.py``, at each input), as the
far-end audio is placed for echo suppression (``shim/output.py``). The echo tail is
the relay gate's (``shim/dialects/relay_gate.py``). Sans-I/O: samples in, no clock.
"""

from __future__ import annotations

from shim.input_history import ms_to_sample
from shim.vad_gate import WINDOW_MS, SpeechStarted

# After the answer's audio ends, its echo may still reach the microphone this long (the
# GA relay's gate holds the microphone as long: shim/dialects/relay_gate.py).
ECHO_TAIL_MS = 300
WINDOW = ms_to_sample(WINDOW_MS)


class EchoRun:
    def __init__(self) -> None:
        # The VAD-timeline sample the answer last played at, when it was last seen playing.
        self._answer_end = 0
        self.started: SpeechStarted | None = None  # the run begun over the answer
        self.echo = False  # some of the run was judged the answer's echo
        self._after = 0  # speech windows of the run past the answer's end and tail

    @property
    def pending(self) -> bool:
        """A run judged echo goes on: it may yet be the user's turn (keep its audio)."""
        return self.started is not None and self.echo

    def follow(self, playing: bool, newest: int) -> None:
        """The answer plays, or not, with ``newest`` the newest input sample (VAD timeline)."""
        if playing:
            self._answer_end = max(self._answer_end, newest)

    def begin(self, ev: SpeechStarted) -> None:
        """The VAD started a run of speech over the answer (not a turn)."""
        self.started, self.echo, self._after = ev, False, 0

    def end(self) -> None:
        """The run ended, or was decided otherwise (a barge-in, a turn)."""
        self.started, self.echo, self._after = None, False, 0

    def window(
        self, playing: bool, echo: bool, speech: bool, end_sample: int, min_speech_ms: int
    ) -> SpeechStarted | None:
        """One VAD window of the run: its start, once the run outlasts the answer's echo.

        ``echo``: the window was judged the answer's echo; ``speech``: the VAD calls it
        speech."""
        if self.started is None:
            return None
        if playing:
            self.echo = self.echo or echo
            return None
        past = end_sample - WINDOW >= self._answer_end + ms_to_sample(ECHO_TAIL_MS)
        if not (self.echo and speech and past):
            return None
        self._after += 1
        if self._after * WINDOW_MS < min_speech_ms:
            return None
        started = self.started
        self.end()
        return started
