"""The ``event_id`` of a GA client's ``response.create``, named in the upstream's refusal.

A GA client matches an ``error`` to the event that caused it by ``error.event_id``
(OpenAI names the client's event in every error it answers one with). vLLM-Omni
0.30.0 names none in its refusals of a ``response.create``
(``response_already_active``, ``response_create_without_input``: its duplex envelope
leaves ``event_id`` out when absent, ``docs/fidelity.md``), so a client that sent two
creates cannot tell which one was refused. The upstream answers the creates in the
order they were sent, each with a ``response.created`` or a refusal: the relay keeps
the ids of the creates it forwarded and not yet answered, and names the oldest in a
refusal that names none (``docs/protocol.md``, "GA clients over a duplex upstream").

A wrong name is worse than none, so whenever the relay cannot be sure which create an
answer is for, it names none rather than shift: creates beyond ``PENDING`` and those
waiting when an unnamed error of another kind came are only counted (``_unsure``;
not for a ``bad_event`` whose words name no ``response.create``: it is about another
event, ``refuses_create``); an upstream session given up or replaced answers none of
them (``forget``); a response the upstream made of its own on a server-VAD commit
answers none (``auto_due``).

One resumed on a new socket answers those it received, but a create written into the
dying socket (or held for the new one past the edge's bound) never reached it
(``proxy/emulated/upstream_control.py``), and no one can tell: the creates waiting
then are doubtful (``resumed``), each answered once or never. The upstream answers
in the order it received, so their answers come before any to a create sent after
the resume: one while none of those waits is a doubtful one's, named none; one while
some wait could be either, and from there on each is named none (``unsure``).

That doubt drains: once the upstream has answered all it was asked, no create waits,
and naming starts again (``drained``, at a quiet ``response.done``: ``ga_told.py``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.dialects.ga_response_create import refuses_create

PENDING = 16  # creates not yet answered, named; more are counted and named in no refusal
# vLLM-Omni's refusals of a client's commit (engine/duplex/realtime_events.py
# ``resolve_commit``: an empty buffer, its VAD having committed it first;
# engine/duplex/session/runner.py ``_on_commit``: the append before it failed, or
# its own empty-buffer check, which names no event), and GA's code the relay tells the
# first as (``ga_events.py``): never a create's answer. The proxy sends no commit of
# its own, so each refuses one of the client's.
COMMIT_REFUSALS = frozenset(
    {"input_audio_buffer_empty", "input_audio_buffer_commit_empty", "commit_aborted"}
)


class CreateIds:
    """The forwarded creates not yet answered, oldest first (None: a create without id)."""

    __slots__ = (
        "_doubtful",
        "_fresh",
        "_pending",
        "_unsure",
        "auto_due",
        "auto_maybe",
        "doubted",
        "took",
    )

    def __init__(self) -> None:
        self._pending: deque[str | None] = deque()
        # Creates after (or in place of) the named ones, whose answers name none: once
        # any is counted, every later one is, so the named ones keep their order.
        self._unsure = 0
        # The upstream's server VAD committed a turn: its next response.created is the
        # upstream's own answer to it, not a client create's.
        self.auto_due = False
        # Its next response.created (one per such commit) may be its own or a create's
        # answer (a commit the proxy cannot tell the VAD's from the client's).
        self.auto_maybe = 0
        # Creates waiting when the upstream resumed: answered once, or never (``resumed``).
        self._doubtful = 0
        # The last response.created answered a create (``took``), one that may be a
        # doubtful one's (``doubted``: it tells no create's metadata).
        self.took = self.doubted = False
        # Creates forwarded since the last response.created: maybe not yet received.
        self._fresh = 0

    def sent(self, event_id: Any) -> None:
        self._fresh += 1
        if self._unsure or len(self._pending) >= PENDING:
            self._unsure += 1
            return
        self._pending.append(event_id if isinstance(event_id, str) else None)

    @property
    def waiting(self) -> bool:
        """Some create forwarded may still be answered."""
        return bool(self._pending or self._unsure or self._doubtful)

    def forget(self) -> None:
        """The upstream session is gone (or fresh): no create waiting is answered."""
        self._pending.clear()
        self._unsure = self._doubtful = self.auto_maybe = self._fresh = 0
        self.auto_due = False

    def drained(self) -> bool:
        """At the upstream's ``response.done``, with nothing else outstanding (no client
        commit on its way: ``ga_told.py``): if no create is known waiting, none was
        forwarded since the last ``response.created`` and no response of the upstream's
        own is due, the creates counted doubtful or unsure are all answered, and naming
        starts again (returns whether any was counted).

        Why that is so: vLLM-Omni takes a session's commands and its model's outputs
        from one mailbox, in order (engine/duplex/session/runner.py ``_run``), and
        answers a create as it takes it, at once (a ``response.created``, or a refusal
        while a response runs). A create forwarded before the proxy was told this
        response's ``response.created`` reached that mailbox before the response's last
        output, its answer before this ``response.done``, as long as the response
        lasted longer than the way to the upstream and back: a spoken answer does (a
        response the upstream replays after a resume, made before the resume, is told
        in one go: a create sent just after the resume may still be on its way then,
        and its answer, if another create follows at once, names that one). A create
        that died with a dropped socket is answered never. So what is left counted are
        answers taken for something else (the upstream's own, a doubtful create's),
        which never come. A create forwarded after that ``response.created`` keeps the
        count as it is until the next quiet point."""
        if self._pending or self._fresh or self.auto_due or self.auto_maybe:
            return False
        counted = bool(self._unsure or self._doubtful)
        self._unsure = self._doubtful = 0
        return counted

    def resumed(self) -> None:
        """The upstream session is back on a new socket: each create waiting may have
        died with the old one. A response its VAD owes is still due (``auto_due``)."""
        self._doubtful += len(self._pending) + self._unsure
        self._pending.clear()
        self._unsure = 0

    def unsure(self, extra: int = 0) -> None:
        """Which create the answers to come are for is no longer known: each waiting
        (and ``extra`` more, taken for answered but not) is named none."""
        self._unsure += len(self._pending) + extra
        self._pending.clear()

    def _answered(self) -> str | None:
        self.doubted = bool(self._doubtful)
        if self._doubtful:
            if self._pending or self._unsure:
                self.unsure()  # a doubtful create's answer or the oldest later one's
            # At most this many doubtful ones are still to be answered; as many later
            # ones still wait, for all the proxy knows (``_unsure``: named none).
            self._doubtful -= 1
            return None
        if self._pending:
            return self._pending.popleft()
        self._unsure = max(0, self._unsure - 1)
        return None

    def named(self, ev: dict[str, Any], upstream: bool = True) -> dict[str, Any]:
        """``ev`` with the create it answers named, if it is a refusal naming none;
        ``upstream``: the input was the upstream's (not a client event the proxy refused)."""
        kind = ev.get("type")
        if kind == "response.created":
            self.took = self.doubted = False
            self._fresh = 0
            if self.auto_due:
                self.auto_due = False  # the upstream's own answer to its VAD's commit
            elif self.auto_maybe:
                # Counted as its own: if a create's answer, that create is counted
                # still waiting, and none is named, rather than the next one shifted.
                self.auto_maybe, self.doubted = self.auto_maybe - 1, True
                self.unsure()
            elif self.waiting:
                self.took = True
                self._answered()
            return ev
        err = ev.get("error")
        if kind != "error" or not isinstance(err, dict):
            return ev
        if not self.waiting or err.get("code") in COMMIT_REFUSALS:
            return ev
        named = err.get("event_id")
        if named is not None:
            if named in self._pending:
                self._pending.remove(named)  # a refusal naming its create
                self._doubtful = 0  # sent after them: theirs came first, if at all
            return ev
        if not refuses_create(err):
            if upstream and err.get("code") != "bad_event":
                # Maybe the answer to a create, maybe not: name none from here on.
                self._unsure += len(self._pending)
                self._pending.clear()
            return ev
        event_id = self._answered()
        if event_id is None:
            return ev
        return {**ev, "error": {**err, "event_id": event_id}}
