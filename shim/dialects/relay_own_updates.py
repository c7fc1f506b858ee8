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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.actions import Action, SendClient, SendUpstream

PREFIX = "proxy_settings_"
SETTINGS_NOT_KEPT = "The session's settings could not all be given to its new upstream session: {}"


class OwnUpdates:
    """The answers still due to the relay's own opening and updates of a fresh session."""

    def __init__(self) -> None:
        self.due = 0
        self._ids: set[str] = set()
        self._sent = 0
        self._opening: bool = False  # a fresh session's session.created still to come
        self._created: Any = None  # its session object, until the next event is seen

    def fresh(self, actions: list[Action]) -> list[Action]:
        """A fresh upstream session opens and gets ``actions`` after its opening: each
        update among them is numbered, and its answer due."""
        self.due, self._ids, self._opening, self._created = 0, set(), True, None
        out: list[Action] = []
        for action in actions:
            if isinstance(action, SendUpstream) and action.event.get("type") == "session.update":
                self._sent += 1
                event_id = f"{PREFIX}{self._sent}"
                self._ids.add(event_id)
                self.due += 1
                action = SendUpstream({**action.event, "event_id": event_id})
            out.append(action)
        return out

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
        if kind == "session.updated" and self.due > 0:
            self.due -= 1
            return []
        err = ev.get("error")
        event_id = err.get("event_id") if isinstance(err, dict) else None
        if kind != "error" or not isinstance(event_id, str) or event_id not in self._ids:
            return None
        assert isinstance(err, dict)
        self._ids.discard(event_id)
        self.due = max(0, self.due - 1)
        # The upstream's refusal as it is, but for the proxy's own event id and words.
        told = {k: v for k, v in err.items() if k != "event_id"}
        told["message"] = SETTINGS_NOT_KEPT.format(err.get("message") or err.get("code"))
        return [SendClient({**ev, "error": told})]
