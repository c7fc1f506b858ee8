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
them (``forget``; one resumed on a new socket still does); a response the upstream
made of its own on a server-VAD commit answers none (``auto_due``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.dialects.ga_response_create import refuses_create

PENDING = 16  # creates not yet answered, named; more are counted and named in no refusal


class CreateIds:
    """The forwarded creates not yet answered, oldest first (None: a create without id)."""

    __slots__ = ("_pending", "_unsure", "auto_due")

    def __init__(self) -> None:
        self._pending: deque[str | None] = deque()
        # Creates after (or in place of) the named ones, whose answers name none: once
        # any is counted, every later one is, so the named ones keep their order.
        self._unsure = 0
        # The upstream's server VAD committed a turn: its next response.created is the
        # upstream's own answer to it, not a client create's.
        self.auto_due = False

    def sent(self, event_id: Any) -> None:
        if self._unsure or len(self._pending) >= PENDING:
            self._unsure += 1
            return
        self._pending.append(event_id if isinstance(event_id, str) else None)

    def forget(self) -> None:
        """The upstream session is gone (or fresh): no create waiting is answered."""
        self._pending.clear()
        self._unsure, self.auto_due = 0, False

    def _answered(self) -> str | None:
        if self._pending:
            return self._pending.popleft()
        self._unsure = max(0, self._unsure - 1)
        return None

    def named(self, ev: dict[str, Any], upstream: bool = True) -> dict[str, Any]:
        """``ev`` with the create it answers named, if it is a refusal naming none;
        ``upstream``: the input was the upstream's (not a client event the proxy refused)."""
        kind = ev.get("type")
        if kind == "response.created":
            if self.auto_due:
                self.auto_due = False  # the upstream's own answer to its VAD's commit
            else:
                self._answered()
            return ev
        err = ev.get("error")
        if kind != "error" or not isinstance(err, dict):
            return ev
        if not self._pending and not self._unsure:
            return ev
        named = err.get("event_id")
        if named is not None:
            if named in self._pending:
                self._pending.remove(named)  # a refusal naming its create
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
