"""Which request a duplex upstream's ``item_not_found`` answers, for a GA client
(``shim/dialects/ga_item_refusals.py``)."""

from __future__ import annotations

import json
from typing import Any

from shim.actions import ForwardUpstream, SendClient
from shim.dialects.ga_item_refusals import ItemRequests
from shim.dialects.ga_told import ToldToClient
from shim.inputs import ClientEvent, UpstreamEvent


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


def test_a_request_answered_upstream_is_let_go() -> None:
    """A retrieve and a delete the upstream answered (``retrieved``, ``deleted``) are
    not what a later refusal naming no event answers."""
    items = ItemRequests()
    items.sent({"type": "conversation.item.retrieve", "item_id": "a"})
    items.answered({"type": "conversation.item.retrieved", "item": {"id": "a"}})
    items.sent({"type": "conversation.item.delete", "item_id": "a"})
    items.answered({"type": "conversation.item.deleted", "item_id": "a"})
    items.sent({"type": "conversation.item.delete", "item_id": "a"})
    told = items.named(not_found("a"))
    assert code(told) == "item_delete_invalid_item_id", told
    assert code(items.named(not_found("a"))) == "item_not_found"  # nothing left to place


def test_a_truncate_is_never_kept() -> None:
    """A GA client's truncate is the proxy's to answer (the upstream's answer to it is
    kept from the client): a later refusal is never told as one."""
    items = ItemRequests()
    items.sent({"type": "conversation.item.truncate", "item_id": "a", "audio_end_ms": 5})
    items.sent({"type": "conversation.item.delete", "item_id": "a"})
    assert code(items.named(not_found("a"))) == "item_delete_invalid_item_id"
    assert code(items.named(not_found("a"))) == "item_not_found"


def test_one_naming_no_event_answers_the_oldest_request_waiting_on_its_item() -> None:
    # The upstream answers in order: two requests for one item, both refused, come back
    # in the order they went up.
    items = ItemRequests()
    items.sent({"type": "conversation.item.retrieve", "item_id": "a"})
    items.sent({"type": "conversation.item.delete", "item_id": "b"})
    items.sent({"type": "conversation.item.delete", "item_id": "a"})
    assert code(items.named(not_found("a"))) == "item_retrieve_invalid_item_id"
    assert code(items.named(not_found("a"))) == "item_delete_invalid_item_id"


def test_an_error_naming_a_request_lets_it_go_whatever_its_code() -> None:
    items = ItemRequests()
    items.sent({"type": "conversation.item.retrieve", "item_id": "a", "event_id": "r"})
    other = {"type": "error", "error": {"code": "rate_limited", "message": "x", "event_id": "r"}}
    assert items.named(other) == other
    assert code(items.named(not_found("a", "r"))) == "item_not_found"


def test_an_empty_event_id_is_none() -> None:
    """vLLM-Omni names no event back for an ``event_id`` of ``""``."""
    items = ItemRequests()
    items.sent({"type": "conversation.item.delete", "item_id": "a", "event_id": ""})
    assert code(items.named(not_found("a"))) == "item_delete_invalid_item_id"


def test_only_a_request_that_goes_upstream_is_kept() -> None:
    """The relay answers a retrieve of an assistant item it played itself: no answer
    comes from the upstream, and no later refusal is told as that retrieve's."""
    told = ToldToClient()
    retrieve = {"type": "conversation.item.retrieve", "item_id": "a"}
    answered_here = [SendClient({"type": "conversation.item.retrieved", "item": {"id": "a"}})]
    told.told(ClientEvent(retrieve, json.dumps(retrieve), 0.0), answered_here, True)
    delete = {"type": "conversation.item.delete", "item_id": "a"}
    raw = json.dumps(delete)
    told.told(ClientEvent(delete, raw, 0.0), [ForwardUpstream(raw)], True)
    refused = told.told(UpstreamEvent(not_found("a"), "", 0.0), [SendClient(not_found("a"))], True)
    [error] = [a.event for a in refused if isinstance(a, SendClient)]
    assert code(error) == "item_delete_invalid_item_id"
    # The delete's refusal was placed; the retrieve was never kept.
    again = told.told(UpstreamEvent(not_found("a"), "", 0.0), [SendClient(not_found("a"))], True)
    assert [code(a.event) for a in again if isinstance(a, SendClient)] == ["item_not_found"]


def test_an_upstream_answer_lets_its_request_go() -> None:
    told = ToldToClient()
    delete = {"type": "conversation.item.delete", "item_id": "a"}
    raw = json.dumps(delete)
    for _ in range(2):
        told.told(ClientEvent(delete, raw, 0.0), [ForwardUpstream(raw)], True)
    deleted = {"type": "conversation.item.deleted", "item_id": "a"}
    told.told(UpstreamEvent(deleted, "", 0.0), [SendClient(deleted)], True)
    refused = told.told(UpstreamEvent(not_found("a"), "", 0.0), [SendClient(not_found("a"))], True)
    assert [code(a.event) for a in refused if isinstance(a, SendClient)] == [
        "item_delete_invalid_item_id"
    ]
    again = told.told(UpstreamEvent(not_found("a"), "", 0.0), [SendClient(not_found("a"))], True)
    assert [code(a.event) for a in again if isinstance(a, SendClient)] == ["item_not_found"]


def test_an_upstream_event_whose_type_is_no_string_is_passed_by() -> None:
    # A misbehaving upstream may send any JSON as the type: never a fault (a client's
    # is refused at the edge).
    told = ToldToClient()
    odd: dict[str, Any] = {"type": {"not": "a string"}}
    # (the relay tells a GA client nothing of it: ``ga_relay.py``)
    assert told.told(UpstreamEvent(odd, json.dumps(odd), 0.0), [], True) == []
