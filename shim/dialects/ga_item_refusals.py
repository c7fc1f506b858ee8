"""A duplex upstream's refusal of an unknown item, in GA's code for the request.

vLLM-Omni refuses a retrieve, a delete and a truncate of an item it does not have
alike: ``item_not_found``, "Conversation item not found: <id>", naming the client's
event when it had an id (its ``engine/duplex/realtime_events.py``,
``resolve_truncate_item``; ``engine/duplex/session/control.py``). OpenAI names the
request in the code (``shim/wire.py``, ``UNKNOWN_ITEM``), and GA clients wait on it
(pipecat's ``retrieve_conversation_item`` on ``item_retrieve_invalid_item_id``). The
relay keeps the latest such requests it passed on (their event ids and items) and
tells a refusal in the code and words of the request it answers: the one its
``event_id`` names, else the oldest naming its item and no event id. One it cannot
place keeps vLLM-Omni's code: a wrong request is worse than none.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from shim.wire import UNKNOWN_ITEM, unknown_item

KEPT = 32  # requests kept; one answered is let go, the oldest go first
_NOT_FOUND = "Conversation item not found: "


class ItemRequests:
    __slots__ = ("_sent",)

    def __init__(self) -> None:
        # (the client's event_id or None, the item named, the request's type)
        self._sent: deque[tuple[str | None, str, str]] = deque(maxlen=KEPT)

    def sent(self, ev: dict[str, Any]) -> None:
        """A client's event, as the relay takes it: kept if it names an item to find."""
        kind, item = ev.get("type"), ev.get("item_id")
        if isinstance(kind, str) and kind in UNKNOWN_ITEM and isinstance(item, str):
            event_id = ev.get("event_id")
            self._sent.append((event_id if isinstance(event_id, str) else None, item, kind))

    def named(self, ev: dict[str, Any]) -> dict[str, Any]:
        """``ev``, or the refusal of an unknown item in GA's code for its request."""
        err = ev.get("error")
        if ev.get("type") != "error" or not isinstance(err, dict):
            return ev
        if err.get("code") != "item_not_found":
            return ev
        message, event_id = err.get("message"), err.get("event_id")
        item = None
        if isinstance(message, str) and message.startswith(_NOT_FOUND):
            item = message[len(_NOT_FOUND) :]
        for entry in self._sent:
            named, kept_item, kind = entry
            if (event_id is not None and named == event_id) or (
                event_id is None and named is None and kept_item == item
            ):
                self._sent.remove(entry)
                code, words = unknown_item(kind, kept_item)
                return {**ev, "error": {**err, "code": code, "message": words}}
        return ev

    def forget(self) -> None:
        """The upstream session is gone: none of the requests kept is answered."""
        self._sent.clear()
