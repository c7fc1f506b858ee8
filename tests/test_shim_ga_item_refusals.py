"""Which request a duplex upstream's ``item_not_found`` answers, for a GA client
(``shim/dialects/ga_item_refusals.py``)."""

from __future__ import annotations

from typing import Any

from shim.dialects.ga_item_refusals import ItemRequests


def not_found(item: str, event_id: str | None = None) -> dict[str, Any]:
    err = {"type": "invalid_request_error", "code": "item_not_found"}
    err["message"] = f"Conversation item not found: {item}"
    if event_id is not None:
        err["event_id"] = event_id
    return {"type": "error", "error": err}


def code(ev: dict[str, Any]) -> str:
    return str(ev["error"]["code"])


def test_a_refusal_is_told_for_the_request_its_event_id_names() -> None:
    items = ItemRequests()
    items.sent({"type": "conversation.item.delete", "item_id": "a", "event_id": "d"})
    items.sent({"type": "conversation.item.retrieve", "item_id": "a", "event_id": "r"})
    assert code(items.named(not_found("a", "r"))) == "item_retrieve_invalid_item_id"
    assert code(items.named(not_found("a", "d"))) == "item_delete_invalid_item_id"
    # Each request is answered once: a second refusal naming it is not placed.
    assert code(items.named(not_found("a", "d"))) == "item_not_found"


def test_one_naming_no_event_is_placed_by_its_item_among_requests_naming_none() -> None:
    items = ItemRequests()
    items.sent({"type": "conversation.item.retrieve", "item_id": "a", "event_id": "r"})
    items.sent({"type": "conversation.item.delete", "item_id": "a"})
    told = items.named(not_found("a"))
    assert code(told) == "item_delete_invalid_item_id"
    assert told["error"]["message"] == "Error deleting item: the item with id 'a' does not exist."


def test_one_it_cannot_place_keeps_the_upstreams_code() -> None:
    items = ItemRequests()
    assert code(items.named(not_found("a", "e"))) == "item_not_found"
    items.sent({"type": "conversation.item.retrieve", "item_id": "a", "event_id": "r"})
    items.forget()  # the upstream session is gone: nothing it was asked is answered
    assert code(items.named(not_found("a", "r"))) == "item_not_found"
