"""A GA client's ``conversation.item.create`` over a duplex upstream, checked as GA types it.

The relay passes the item on to vLLM-Omni, which keeps what it is given and tells it
back in ``conversation.item.added`` / ``created`` / ``done``: an item no GA type
describes (a message with a role GA does not have, an item type it does not have)
would reach the client in events its own SDK refuses to read. So an item that is no
object, whose ``type`` is not one of GA's item types, or a message naming a ``role``
that is not GA's, is refused here (``invalid_value`` naming the field) and never goes up.
"""

from __future__ import annotations

from typing import Any

# GA's conversation item types (``openai/types/realtime/conversation_item.py``) and
# the roles of its message items.
ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "mcp_approval_response",
        "mcp_approval_request",
        "mcp_list_tools",
        "mcp_call",
    }
)
ROLES = frozenset({"user", "assistant", "system"})


def refusal(ev: dict[str, Any]) -> tuple[str, str, str] | None:
    """(code, message, param) of an item GA does not describe, or None."""
    item = ev.get("item")
    if not isinstance(item, dict):
        return "invalid_value", "item must be an object", "item"
    kind = item.get("type", "message")
    if kind not in ITEM_TYPES:
        return "invalid_value", f"item.type {kind!r} is not a conversation item type", "item.type"
    role = item.get("role")  # none named: the user's, as vLLM-Omni reads it
    if kind == "message" and role is not None and role not in ROLES:
        words = f"item.role {role!r}: a message is the user's, the assistant's or the system's"
        return "invalid_value", words, "item.role"
    return None
