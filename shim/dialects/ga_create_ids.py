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
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.actions import Action, SendClient
from shim.dialects.ga_response_create import CREATE_REFUSALS

PENDING = 16  # creates not yet answered; a client that sends more gets the latest named


class CreateIds:
    """The forwarded creates not yet answered, oldest first (None: a create without id)."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: deque[str | None] = deque(maxlen=PENDING)

    def sent(self, event_id: Any) -> None:
        self._pending.append(event_id if isinstance(event_id, str) else None)

    def named_all(self, actions: list[Action]) -> list[Action]:
        return [
            SendClient(self.named(a.event)) if isinstance(a, SendClient) else a for a in actions
        ]

    def named(self, ev: dict[str, Any]) -> dict[str, Any]:
        """``ev`` with the create it answers named, if it is a refusal naming none."""
        kind = ev.get("type")
        if kind == "response.created":
            if self._pending:
                self._pending.popleft()  # that create is answered
            return ev
        err = ev.get("error")
        if kind != "error" or not isinstance(err, dict) or not self._pending:
            return ev
        named = err.get("event_id")
        if named is not None:
            if named in self._pending:
                self._pending.remove(named)  # a refusal naming its create
            return ev
        if err.get("code") not in CREATE_REFUSALS:
            return ev
        event_id = self._pending.popleft()
        if event_id is None:
            return ev
        return {**ev, "error": {**err, "event_id": event_id}}
