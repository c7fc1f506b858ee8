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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The snapshot's key for the timer (``IdleTimer.wire``), and its layout's version.
KEY = "idle"
WIRE_VERSION = 1


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
        self.away_ms: float | None = None  # since when no client is attached

    def step(
        self, now: float, timeout_ms: int | None, quiet: bool, audio_end_ms: int, mark: str | None
    ) -> IdleStretch | None:
        """One look at the session at ``now``; the stretch to commit once it is due.

        ``mark`` names the last thing that happened (the newest conversation item: a
        committed turn, an answer): the quiet starts again whenever it changes, even
        between two looks, and a timeout needs something new since the last one. It
        neither runs nor fires while no client is attached (``away``)."""
        if self.away_ms is not None:
            return None
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
        if timeout_ms is None or self.since_ms is None or self.away_ms is not None:
            return None
        return self.since_ms + timeout_ms

    def away(self, now: float) -> None:
        """The client left: the quiet stops counting (nobody is there to be silent)."""
        if self.away_ms is None:
            self.away_ms = now

    def back(self, now: float) -> None:
        """A client is attached again: the quiet goes on from where it stopped, the time
        away not counted (as a move to another replica goes on with it)."""
        if self.away_ms is not None and self.since_ms is not None:
            self.since_ms += max(0.0, now - self.away_ms)
        self.away_ms = None

    def wire(self) -> dict[str, Any]:
        """The timer for the session snapshot: a move to another replica goes on with
        the quiet where it was (``since_ms`` on the edge's clock: the edge tells it on
        the wall clock in the store, ``shim/snapshot_clock.py``)."""
        return {
            KEY: {
                "v": WIRE_VERSION,
                "since_ms": self.since_ms,
                "since_audio_ms": self.since_audio_ms,
                "since_mark": self._since_mark,
                "fired_mark": self._fired_mark,
                "away_ms": self.away_ms,
            }
        }

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Take ``wire``'s timer back; a snapshot without it (or of a layout this does
        not read) leaves the timer fresh: it starts with the next quiet."""
        raw = snap.get(KEY)
        if not isinstance(raw, Mapping) or raw.get("v") != WIRE_VERSION:
            return
        since, audio = raw.get("since_ms"), raw.get("since_audio_ms")
        marks = raw.get("since_mark"), raw.get("fired_mark")
        if not all(m is None or isinstance(m, str) for m in marks):
            return
        number = isinstance(since, (int, float)) and not isinstance(since, bool)
        self.since_ms = float(since) if number and since is not None else None
        self.since_audio_ms = audio if isinstance(audio, int) and audio >= 0 else 0
        self._since_mark, self._fired_mark = marks
        away = raw.get("away_ms")
        number = isinstance(away, (int, float)) and not isinstance(away, bool)
        self.away_ms = float(away) if number and away is not None else None
