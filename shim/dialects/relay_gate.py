"""The microphone audio a duplex upstream hears while the assistant plays, for a GA client.

The upstream hears the microphone too, and its own rules on overlapping speech are not
a GA client's: under server VAD it barges in on any speech (the assistant's echo, a
backchannel), and under ``listen_only`` it keeps that speech as the next turn and
answers it (``docs/fidelity.md``, rows 1a and 4). So while the assistant's answer owns
the turn (it plays, or its end is not yet acknowledged upstream) or an overlap is
undecided, the proxy holds the client's audio back from the upstream:

* a decided barge-in: the proxy has cut the answer upstream, then the held audio
  from the speech's onset goes on (the user's words, nothing lost);
* the answer ends with the user speaking: the same, from the speech's onset;
* anything else (echo, a backchannel, noise, silence): the held audio is dropped.

Appends are kept with their place on the input timeline (VAD-rate samples), bounded.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.actions import Action, SendUpstream
from shim.input_history import ms_to_sample

# Audio kept at most while the gate is closed; an answer longer than this loses only
# the oldest audio, which is echo or silence unless a barge-in is decided on it.
KEEP_MS = 12_000
# Audio before a speech's onset that goes with it (the VAD's own padding is in onset).
PREFIX_MS = 100


class AudioGate:
    def __init__(self) -> None:
        # (start sample, end sample, append event) of held appends, oldest first.
        self.held: deque[tuple[int, int, dict[str, Any]]] = deque()

    def hold(self, start: int, end: int, ev: dict[str, Any]) -> None:
        self.held.append((start, end, ev))
        while self.held and end - self.held[0][1] > ms_to_sample(KEEP_MS):
            self.held.popleft()

    def release(self, onset_ms: int | None) -> list[Action]:
        """Send what was held from ``onset_ms`` (input time) on; drop the rest.
        None: drop everything."""
        held, self.held = list(self.held), deque()
        if onset_ms is None:
            return []
        first = ms_to_sample(max(0, onset_ms - PREFIX_MS))
        return [SendUpstream(ev) for start, end, ev in held if end > first]

    def drop(self) -> None:
        self.held.clear()
