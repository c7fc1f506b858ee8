"""A GA client's push-to-talk turn pressed over an answer: what the upstream must hear.

To a vLLM-Omni duplex upstream an answer is in progress while it is generated, and
after that while its audio is not acknowledged as played (``committed_ms <
sent_ms``); meanwhile a commit is only acknowledged, a short turn dropped as an
interjection, and a ``response.create`` refused (``docs/fidelity.md``, row 1a). A
GA client presses the button over the answer anyway: it cancels the answer and
truncates it where its playback stopped, or it just talks over it. What the upstream
does with that is not what a GA client expects:

* a client's ``response.cancel`` that reaches an upstream done generating is
  refused, and its playback stays in progress; a truncate only commits what was
  heard, the rest still plays. So the proxy stops that playback with
  ``output_audio_buffer.clear`` after a client's truncate of an answer generated in
  full, and its own cut is made with one (``relay_cut.py``);
* no acknowledgement hands over an answer still generated. So a push-to-talk commit
  made meanwhile waits, and with it everything the client sends upstream after it,
  in order (the audio before it stays held: ``relay_gate.py``; its cancel or
  truncate of the answer goes at once), for the answer's end upstream: its
  ``response.done``, completed or cancelled by the client's cancel, or the proxy's
  cut. Then it goes on as a commit made then (``relay_turn_end.py``): the ack of the
  answer in full unless its end was told already, the held audio, the commit, then
  what followed it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.actions import Action, ForwardUpstream, SendUpstream
from shim.dialects import relay_cut
from shim.dialects.relay_gate import KEEP_MS
from shim.output import ActiveResponse

# What a client's input made go upstream, with the client event's type and whether
# push-to-talk was on when the client sent it (its commit goes as it was made then).
Waiting = tuple[Action, object, bool]
# The client's word on the answer, not on its input: it goes at once, a waiting commit
# or not (a cancel ahead of the commit ends the wait sooner).
AT_ONCE = frozenset({"response.cancel", "conversation.item.truncate"})
# What may wait, in characters of the events (their base64 audio, mostly): as much as
# the gate holds while an answer owns the turn (``KEEP_MS``) of 24 kHz PCM16, the GA
# format. Past it, what waited goes on at once, in order, as a commit made over the
# answer did before it waited (the upstream may then drop a short turn): memory and
# the session snapshot stay bounded.
MAX_WAITING_CHARS = KEEP_MS * 48 * 4 // 3


class TurnWait:
    def __init__(self) -> None:
        # The client's upstream-bound actions from its waiting commit on, in order
        # (as its handlers made them: converted to the upstream's format only when
        # they go, after the held audio).
        self.queue: list[Waiting] | None = None
        self.chars = 0  # their size (``MAX_WAITING_CHARS``)
        # The response the upstream has been told is over (or ended itself).
        self.stopped: str | None = None

    @property
    def pending(self) -> bool:
        return self.queue is not None

    def route(self, actions: list[Action], kind: object, defer: bool, whole: bool) -> list[Action]:
        """A client input's actions: those bound upstream wait behind a waiting commit
        (``defer``: this input is a commit that must wait; ``whole``: push-to-talk)."""
        if defer and self.queue is None:
            self.queue = []
        if self.queue is None or kind in AT_ONCE:
            return actions
        out: list[Action] = []
        for action in actions:
            if isinstance(action, (SendUpstream, ForwardUpstream)):
                self.queue.append((action, kind, whole))
                self.chars += size(action)
            else:
                out.append(action)
        return out

    def due(self, resp: ActiveResponse | None) -> list[Waiting]:
        """What waited, once the answer is no longer generated upstream."""
        if self.queue is None or (generating(resp) and self.chars <= MAX_WAITING_CHARS):
            return []
        queue, self.queue, self.chars = self.queue, None, 0
        return queue

    def note_done(self, resp: ActiveResponse | None, ev: dict[str, Any]) -> bool:
        """The upstream's ``response.done`` for ``resp``: True when it ended it cancelled
        itself (a client's ``response.cancel``): its playback is over to it."""
        body = ev.get("response")
        status = body.get("status") if isinstance(body, dict) else None
        if resp is None or status != "cancelled":
            return False
        rid = body.get("id") if isinstance(body, dict) else None
        if rid not in (None, resp.response_id):
            return False
        self.stopped = resp.response_id
        return True


def size(action: SendUpstream | ForwardUpstream) -> int:
    """An upstream-bound action's size, near enough: its text, or its event's strings."""
    if isinstance(action, ForwardUpstream):
        return len(action.raw)
    return 64 + sum(len(v) for v in action.event.values() if isinstance(v, str))


def generating(resp: ActiveResponse | None) -> bool:
    """The upstream is generating the answer and the proxy did not cut it."""
    return resp is not None and resp.producing


def stop_playback(wait: TurnWait, cancelled_ids: deque[str], rid: str) -> SendUpstream:
    """Tell the upstream the client's playback of ``rid`` is over; its answer
    (``output_audio_buffer.cleared``) is the proxy's, kept from the client."""
    wait.stopped = rid
    return relay_cut.clear(cancelled_ids, rid)
