"""A response's assistant item, told to a GA client in GA's order.

OpenAI tells an item a response adds as ``response.output_item.added``, then
``conversation.item.added`` (then ``response.content_part.added`` and the deltas); a
client that builds its view of the response from the first may take the second for an
item outside any response. vLLM-Omni adds the item to the conversation first
(``conversation.item.added`` / ``created``, in progress), then to the response. So
the relay holds those two until the item's ``response.output_item.added`` has gone,
and sends them right after it; anything else naming the item, or any
``response.done``, sends them first, so nothing is ever held back longer
(``docs/protocol.md``, "Server events").
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action

ADDED = frozenset({"conversation.item.added", "conversation.item.created"})
OUTPUT_ADDED = "response.output_item.added"


def _held_item(kind: Any, item: Any) -> str | None:
    """The id of an assistant item being generated that ``kind`` adds, else None."""
    if kind not in ADDED or not isinstance(item, dict):
        return None
    if item.get("role") != "assistant" or item.get("status") != "in_progress":
        return None
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) else None


class AssistantItemOrder:
    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, list[Action]] = {}  # item id -> its added / created

    def holding(self) -> bool:
        """Whether an item's events wait here for its ``response.output_item.added``."""
        return bool(self._held)

    def ordered(self, actions: list[Action]) -> list[Action]:
        out: list[Action] = []
        for action in actions:
            ev = getattr(action, "event", None)
            if not self._held and not isinstance(ev, dict):
                out.append(action)
                continue
            ev = ev if isinstance(ev, dict) else {}
            kind, item = ev.get("type"), ev.get("item")
            held = _held_item(kind, item)
            if held is not None:
                self._held.setdefault(held, []).append(action)
                continue
            named = item.get("id") if isinstance(item, dict) else ev.get("item_id")
            if not isinstance(named, str):
                named = None  # a malformed client event names no item (and is unhashable)
            if kind == OUTPUT_ADDED and named in self._held:
                out += [action, *self._held.pop(str(named))]
                continue
            if kind == "response.done":
                for waiting in self._held.values():
                    out += waiting
                self._held.clear()
            elif named in self._held:
                out += self._held.pop(str(named))
            out.append(action)
        return out
