"""The user turns ``duplex_emulated`` committed, as ``conversation.item.retrieve`` finds them.

Over a turn-based upstream the proxy commits each user turn itself
(``shim/dialects/turn_wire.py``), so the conversation's user items are the proxy's to
answer for; the assistant's are in the playback ledger (``shim/client_events.py``).
An item is told as it was added: an input-audio message, completed, with no
transcript (the dialect transcribes nothing). The most recent ones are kept.
"""

from __future__ import annotations

from typing import Any

from shim import wire
from shim.actions import Action, SendClient
from shim.bounded_ids import BoundedIds

KEPT = 64  # as many as the playback ledger keeps of the assistant's


class UserItems:
    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids = BoundedIds(KEPT)

    def committed(self, item_id: str) -> None:
        self._ids.add(item_id)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._ids

    def retrieved(self, ev: dict[str, Any]) -> list[Action] | None:
        """``conversation.item.retrieved`` for one of them, else None."""
        item_id = ev.get("item_id")
        if not isinstance(item_id, str) or item_id not in self._ids:
            return None
        return [
            SendClient({"type": "conversation.item.retrieved", "item": wire.user_item(item_id)})
        ]
