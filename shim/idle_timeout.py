"""GA server VAD's ``idle_timeout_ms``: when the user's silence becomes a turn.

OpenAI GA (``RealtimeAudioInputTurnDetection``, server_vad ``idle_timeout_ms``): the
timeout runs from the moment the last response's audio has finished playing; if the
user says nothing for that long, the server tells ``input_audio_buffer.timeout_triggered``
(``audio_start_ms``, ``audio_end_ms``: the silent stretch of input, ``item_id``), commits
the buffer and answers it as if the user had spoken.

This is the timer alone, sans-I/O: time comes in (``now``, the edge's clock), and so
does what the session knows (whether it is quiet, where the input audio ends); out
comes the silent stretch to commit, once it has lasted the timeout. Quiet is the
session's to judge: nothing of the assistant live or playing, no user speech, no turn
in progress or waiting. The timer runs only after something happened (an answer played
out, a user turn committed): a session that has had no turn yet never times out.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IdleStretch:
    """The silent stretch of input the timeout ends, in input audio ms."""

    audio_start_ms: int
    audio_end_ms: int


class IdleTimer:
    def __init__(self) -> None:
        self.since_ms: float | None = None  # when the current quiet began (edge clock)
        self.since_audio_ms = 0  # where the input audio ended then
        self._since_mark: str | None = None  # the last thing that happened, then
        self._fired_mark: str | None = None  # ... when the timeout last fired

    def step(
        self, now: float, timeout_ms: int | None, quiet: bool, audio_end_ms: int, mark: str | None
    ) -> IdleStretch | None:
        """One look at the session at ``now``; the stretch to commit once it is due.

        ``mark`` names the last thing that happened (the newest conversation item: a
        committed turn, an answer): the quiet starts again whenever it changes, even
        between two looks, and a timeout needs something new since the last one."""
        if not quiet or timeout_ms is None or mark is None or mark == self._fired_mark:
            self.since_ms = None
            return None
        if self.since_ms is None or mark != self._since_mark:
            self.since_ms, self.since_audio_ms, self._since_mark = now, audio_end_ms, mark
        if now - self.since_ms < timeout_ms:
            return None
        # One timeout per quiet stretch: the answer it brings arms the next one.
        self.since_ms, self._fired_mark = None, mark
        return IdleStretch(min(self.since_audio_ms, audio_end_ms), audio_end_ms)

    def deadline(self, timeout_ms: int | None) -> float | None:
        """When the timer is due by the clock alone (a wakeup for the edge), if running."""
        if timeout_ms is None or self.since_ms is None:
            return None
        return self.since_ms + timeout_ms
