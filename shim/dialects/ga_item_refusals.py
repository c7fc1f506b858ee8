"""A duplex upstream's refusal of an unknown item, in GA's code for the request.

vLLM-Omni refuses a retrieve, a delete and a truncate of an item it does not have
alike: ``item_not_found``, "Conversation item not found: <id>", naming the client's
event when it had an id (its ``engine/duplex/realtime_events.py``,
``resolve_truncate_item``; ``engine/duplex/session/control.py``). OpenAI names the
request in the code (``shim/wire.py``, ``UNKNOWN_ITEM``), and GA clients wait on it
(pipecat's ``retrieve_conversation_item`` on ``item_retrieve_invalid_item_id``).

The relay keeps the retrieves and deletes it passed on to the upstream and not yet
answered there (their event ids and items; ``ga_told.py`` keeps only those that
went up). A truncate is never kept: the proxy answers a GA client's itself, and the
upstream's answer to one is kept from the client (``relay_reports.py``). A request
is let go once the upstream answers it: ``conversation.item.retrieved`` or
``deleted`` for its item (the oldest such request of that type), or an error naming
its ``event_id``. A refusal is told in the code and words of the request it answers:
the one its ``event_id`` names, else the oldest still waiting that names its item and no
event id (the upstream answers in order, and answered requests are let go). One it
cannot place keeps vLLM-Omni's code: a wrong request is worse than none.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.wire import native_unknown_item, unknown_item

KEPT = 32  # requests kept; one answered is let go, the oldest go first
# The upstream's answer to each request kept, by type.
ANSWERS = {
    "conversation.item.retrieved": "conversation.item.retrieve",
    "conversation.item.deleted": "conversation.item.delete",
}
KEPT_TYPES = frozenset(ANSWERS.values())


class ItemRequests:
    __slots__ = ("_sent",)

    def __init__(self) -> None:
        # (the client's event_id or None, the item named, the request's type)
        self._sent: deque[tuple[str | None, str, str]] = deque(maxlen=KEPT)

    def sent(self, ev: dict[str, Any]) -> None:
        """A client's event that went upstream: kept if a retrieve or delete of an item."""
        kind, item = ev.get("type"), ev.get("item_id")
        if isinstance(kind, str) and kind in KEPT_TYPES and isinstance(item, str):
            self._sent.append((_event_id(ev), item, kind))

    def answered(self, ev: dict[str, Any]) -> None:
        """An upstream event: a ``retrieved`` or ``deleted`` lets its request go."""
        request = ANSWERS.get(str(ev.get("type")))
        if request is None:
            return
        found = ev.get("item")
        item = found.get("id") if isinstance(found, dict) else ev.get("item_id")
        for entry in self._sent:
            if entry[1] == item and entry[2] == request:
                self._sent.remove(entry)
                return

    def named(self, ev: dict[str, Any]) -> dict[str, Any]:
        """``ev``, or the refusal of an unknown item in GA's code for its request."""
        err = ev.get("error")
        if ev.get("type") != "error" or not isinstance(err, dict):
            return ev
        event_id = _event_id(err)
        if event_id is not None:
            entry = next((e for e in self._sent if e[0] == event_id), None)
        elif (item := native_unknown_item(err)) is not None:
            entry = next((e for e in self._sent if e[0] is None and e[1] == item), None)
        else:
            entry = None
        if entry is None:
            return ev
        self._sent.remove(entry)
        if err.get("code") != "item_not_found":
            return ev  # answered, otherwise
        code, words = unknown_item(entry[2], entry[1])
        return {**ev, "error": {**err, "code": code, "message": words}}

    def forget(self) -> None:
        """The upstream session is gone: none of the requests kept is answered."""
        self._sent.clear()


def _event_id(ev: dict[str, Any]) -> str | None:
    """The event id named, or None (vLLM-Omni names none back for ``""``)."""
    event_id = ev.get("event_id")
    return event_id if isinstance(event_id, str) and event_id else None
