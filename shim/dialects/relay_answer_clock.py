"""When the answer plays at the client, on the time it was sent, for the relay's gate.

The relay gate (``relay_gate.py``) holds the microphone until the answer's end as the
client plays it, plus its echo tail, and finds that end on the input timeline
(``relay_input_clock.py``), which dates the microphone by when the edge read each
append. The answer must be dated on the same clock, the client's: a delta reaches
the client when the session handles and sends it. The edge stamps an upstream event
when it reads it, and the playback ledger (``shim/playback.py``) plays each delta
from that stamp; a session behind (short of CPU, its queue full) handles it later,
by as much as it is behind, and the client starts it then. So the gate keeps its own
playhead for the newest answer, from the send time: no earlier than the newest stamp
of any input handled, since inputs are handled in order and each was stamped before
it was handled (as ``shim/echo_clock.py`` places the answer for echo suppression).

On time, the send time is the upstream event's own stamp and the playhead the
ledger's. Time is the edge's stamps (ms); nothing here reads a clock.
"""

from __future__ import annotations

from shim.actions import Action, SendClientAudio
from shim.playback import ItemPlayback


class AnswerClock:
    def __init__(self) -> None:
        self.latest_ms = float("-inf")  # the newest input stamp handled
        self._item: str | None = None  # the answer item the playhead follows
        self._play_end = 0.0  # when the client runs out of its audio, on the send time

    def handled(self, stamp_ms: float) -> None:
        """An input stamped ``stamp_ms`` is being handled: it is no earlier than that."""
        self.latest_ms = max(self.latest_ms, stamp_ms)

    def sent(self, now_ms: float) -> float:
        """When what the session sends while handling an input stamped ``now_ms``
        reaches the client."""
        return max(now_ms, self.latest_ms)

    def follow(self, actions: list[Action], now_ms: float) -> None:
        """The answer's audio among ``actions``, sent while handling an input stamped
        ``now_ms``: the client plays each delta once it has it, after the ones before."""
        for action in actions:
            if not isinstance(action, SendClientAudio) or action.rate_hz <= 0:
                continue
            item = action.event.get("item_id")
            item_id = item if isinstance(item, str) else None
            if item_id != self._item:
                self._item, self._play_end = item_id, 0.0
            start = max(self._play_end, self.sent(now_ms))
            self._play_end = start + action.n_samples * 1000.0 / action.rate_hz

    def play_end(self, item: ItemPlayback) -> float:
        """When the client runs out of ``item``'s audio: the ledger's estimate, or later
        if the session sent it later than the upstream's stamps."""
        if item.item_id != self._item:
            return item.play_end_ms
        return max(item.play_end_ms, self._play_end)
