"""The upstream's own ``speech_started`` / ``speech_stopped`` while the assistant plays.

A duplex upstream hears the microphone too, and announces what it takes for
speech: the assistant's echo, a backchannel, a television. A GA client stops
playback on ``speech_started``, so during playback only the proxy's decision
may reach it (``docs/protocol.md``, "Overlap protocol"). The upstream's events
are held while anything of the assistant plays or an overlap is undecided:

* after a decided barge-in the proxy has told the client itself, so they are
  dropped (and the rest of that speech's, until the upstream commits it);
* once nothing plays, speech still going on is the user's next turn if the
  proxy's own evidence agrees (user-like speech right now): its
  ``speech_started`` is relayed then. Otherwise (the tail of the assistant's
  echo, say) it is dropped, and so is its stop: a client never gets an end
  without its start.
"""

from __future__ import annotations

from typing import Any

STARTED = "input_audio_buffer.speech_started"
STOPPED = "input_audio_buffer.speech_stopped"


class UpstreamSpeech:
    def __init__(self) -> None:
        self.held: list[dict[str, Any]] = []
        self.told_open = False  # a relayed speech_started still waits for its stop

    def on_event(self, ev: dict[str, Any], playing: bool) -> list[dict[str, Any]]:
        """An upstream speech event: what to relay now (the held ones first)."""
        if playing:
            self.held.append(ev)
            return []
        return self.flush(user_speaking=False) + self._relay([ev])

    def flush(self, user_speaking: bool) -> list[dict[str, Any]]:
        """Nothing plays any more: relay what agrees with that, drop the rest.

        ``user_speaking``: the proxy hears the user speaking now; a start still open
        is relayed only then."""
        held, self.held = self.held, []
        return self._relay(held, pair_untold=True, keep_open=user_speaking)

    def drop(self) -> None:
        """The proxy told a barge-in itself: the upstream's word on it is not needed."""
        self.held = []

    def _relay(
        self, events: list[dict[str, Any]], pair_untold: bool = False, keep_open: bool = True
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        for ev in events:
            if ev.get("type") == STARTED:
                if not pair_untold:
                    out.append(ev)
                    self.told_open = True
                else:
                    start = ev
            elif start is not None:
                start = None  # began and ended during playback: never told
            elif self.told_open:
                out.append(ev)
                self.told_open = False
        if start is not None and keep_open:
            out.append(start)
            self.told_open = True
        return out
