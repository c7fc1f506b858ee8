"""The barge-in relay's own ``session.update``s to a fresh upstream session, and the
upstream's answers to them, which a native client never asked for.

After a loss or a move the relay opens a fresh upstream session for the client and
gives it the client's settings by updates of its own (``relay_kept_update.py``:
``given``, ``not_opened``). vLLM-Omni answers its opening, and each update, with a
``session.updated`` (``engine/duplex/realtime_events.py``, ``initial_session_update``;
``engine/duplex/session/control.py``, ``on_session_update``), and it never sends one
unasked: those answers are the proxy's, not the client's. The opening's comes first
after ``session.created``, with the same session object. vLLM-Omni handles a session's
events in order and echoes no ``event_id`` on ``session.updated``, so the answers to
the updates are told apart by count: the first ones after the opening's. A refusal
names the update's ``event_id`` (``emit_error``): the client is told in the proxy's
words that its settings did not all carry over, with the upstream's code.

The updates still unanswered go into the snapshot (``state``), so that a replica
that resumes the same upstream session after a move still counts their answers off.
When the upstream's own session comes back on a new socket, an update still
unanswered may never have been read (the socket dropped as it was written), and
nothing replays what the proxy sent: it is sent again (``again``), as the client's
unsent reports are (``relay_reports.py``), and only its new answer is awaited. One
the upstream did read is then answered twice, the second time with the same
settings, which reaches the client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shim.actions import Action, SendClient, SendUpstream

PREFIX = "proxy_settings_"
SETTINGS_NOT_KEPT = "The session's settings could not all be given to its new upstream session: {}"


class OwnUpdates:
    """The answers still due to the relay's own opening and updates of a fresh session."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, dict[str, Any]]] = []  # (event id, update) unanswered
        self._ids: set[str] = set()
        self._sent = 0
        self._opening: bool = False  # a fresh session's session.created still to come
        self._created: Any = None  # its session object, until the next event is seen

    @property
    def due(self) -> int:
        return len(self.pending)

    def _numbered(self, event: Mapping[str, Any]) -> SendUpstream:
        self._sent += 1
        event_id = f"{PREFIX}{self._sent}"
        self._ids.add(event_id)
        sent = {**event, "event_id": event_id}
        self.pending.append((event_id, sent))
        return SendUpstream(sent)

    def fresh(self, actions: list[Action]) -> list[Action]:
        """A fresh upstream session opens and gets ``actions`` after its opening: each
        update among them is numbered, and its answer due."""
        self.pending, self._ids, self._opening, self._created = [], set(), True, None
        out: list[Action] = []
        for action in actions:
            if isinstance(action, SendUpstream) and action.event.get("type") == "session.update":
                action = self._numbered(action.event)
            out.append(action)
        return out

    def again(self) -> list[Action]:
        """The upstream's own session is back on a new socket: the updates still
        unanswered, sent again under new ids, whose answers alone are awaited."""
        unanswered, self.pending = self.pending, []
        return [self._numbered(event) for _, event in unanswered]

    def state(self) -> tuple[list[Any], ...]:
        """The updates still unanswered, for the snapshot."""
        return tuple([event_id, event] for event_id, event in self.pending)

    def restore(self, state: Iterable[list[Any]]) -> None:
        """Carry on with the same upstream session: its replay answers ``state``."""
        self.pending = [(str(x[0]), x[1]) for x in state if len(x) == 2 and isinstance(x[1], dict)]
        self._ids = {event_id for event_id, _ in self.pending}
        numbers = [int(i[len(PREFIX) :]) for i in self._ids if i[len(PREFIX) :].isdigit()]
        self._sent = max([self._sent, *numbers])

    def bound(self, event: Mapping[str, Any]) -> None:
        """The fresh session's ``session.created``: its opening's answer may follow."""
        if self._opening and event.get("type") == "session.created":
            self._opening, self._created = False, event.get("session")

    def screen(self, ev: dict[str, Any]) -> list[Action] | None:
        """What the client gets instead of ``ev`` when it answers the proxy's own
        opening or update (None: it is not such an answer)."""
        kind = ev.get("type")
        created, self._created = self._created, None
        if kind == "session.updated" and created is not None and ev.get("session") == created:
            return []  # the opening's answer (an upstream that sends none: the next event)
        if kind == "session.updated" and self.pending:
            self.pending.pop(0)
            return []
        err = ev.get("error")
        event_id = err.get("event_id") if isinstance(err, dict) else None
        if kind != "error" or not isinstance(event_id, str) or event_id not in self._ids:
            return None
        assert isinstance(err, dict)
        self._ids.discard(event_id)
        self.pending = [(i, e) for i, e in self.pending if i != event_id]
        # The upstream's refusal as it is, but for the proxy's own event id and words.
        told = {k: v for k, v in err.items() if k != "event_id"}
        told["message"] = SETTINGS_NOT_KEPT.format(err.get("message") or err.get("code"))
        return [SendClient({**ev, "error": told})]
