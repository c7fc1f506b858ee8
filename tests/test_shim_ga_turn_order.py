"""``shim/dialects/ga_turn_order.py``: one user turn, one item id, in GA order."""

from __future__ import annotations

import json
from typing import Any

import orjson

from shim.actions import Action, ForwardUpstream, SendClient, SendUpstream
from shim.dialects.ga_relay import GaRelaySession
from shim.dialects.ga_turn_order import UserTurnOrder
from tests.test_shim_ga_wait_snapshot import make


def user_item(iid: str) -> dict[str, Any]:
    return {
        "id": iid,
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_audio", "transcript": "hi"}],
    }


def upstream_commit(iid: str, previous: str | None) -> list[dict[str, Any]]:
    """vLLM-Omni's order: the item first, then the commit."""
    return [
        {"type": "conversation.item.added", "previous_item_id": previous, "item": user_item(iid)},
        {"type": "conversation.item.created", "previous_item_id": previous, "item": user_item(iid)},
        {"type": "input_audio_buffer.committed", "previous_item_id": previous, "item_id": iid},
        {"type": "conversation.item.done", "previous_item_id": previous, "item": user_item(iid)},
    ]


def events(order: UserTurnOrder, evs: list[dict[str, Any]], end_ms: int = 0) -> list[Any]:
    out = order.to_client([SendClient(ev) for ev in evs], end_ms)
    assert all(isinstance(a, SendClient) for a in out)
    return [a.event for a in out if isinstance(a, SendClient)]


def kinds(evs: list[dict[str, Any]]) -> list[str]:
    return [str(ev["type"]).rsplit(".", 1)[-1] for ev in evs]


def test_an_upstream_turn_is_committed_before_its_item_is_added() -> None:
    order = UserTurnOrder()
    out = events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "u1"}])
    out += events(order, [{"type": "input_audio_buffer.speech_stopped", "item_id": "u1"}])
    out += events(order, upstream_commit("u1", "a0"))
    assert kinds(out) == [
        "speech_started",
        "speech_stopped",
        "committed",
        "added",
        "created",
        "done",
    ]
    assert {ev.get("item_id", ev.get("item", {}).get("id")) for ev in out} == {"u1"}


def test_a_told_barge_in_names_the_upstreams_item_as_told_and_stops_before_its_commit() -> None:
    order = UserTurnOrder()
    told = events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    out = events(order, upstream_commit("u1", "a0"), end_ms=4321)
    assert kinds(told + out) == [
        "speech_started",
        "speech_stopped",
        "committed",
        "added",
        "created",
        "done",
    ]
    assert out[0] == {
        "type": "input_audio_buffer.speech_stopped",
        "item_id": "p1",
        "audio_end_ms": 4321,
    }
    assert all("u1" not in json.dumps(ev) for ev in out), out
    assert out[1]["item_id"] == "p1" and out[1]["previous_item_id"] == "a0"
    # The proxy's own stop, later: told already.
    late = events(order, [{"type": "input_audio_buffer.speech_stopped", "item_id": "p1"}])
    assert late == []
    # Later events name the turn as told: the next item's previous, a retrieve's answer.
    after = events(
        order,
        [
            {"type": "conversation.item.added", "previous_item_id": "u1", "item": {"id": "a1"}},
            {"type": "conversation.item.retrieved", "item": user_item("u1")},
            {"type": "conversation.item.deleted", "item_id": "u1"},
        ],
    )
    assert after[0]["previous_item_id"] == "p1"
    assert after[1]["item"]["id"] == "p1" and after[2]["item_id"] == "p1"


def test_what_the_client_sends_names_the_upstreams_item() -> None:
    order = UserTurnOrder()
    events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    events(order, upstream_commit("u1", None))
    raw = json.dumps({"type": "conversation.item.delete", "item_id": "p1"})
    sent: list[Action] = [
        SendUpstream({"type": "conversation.item.retrieve", "item_id": "p1"}),
        ForwardUpstream(raw),
        SendUpstream({"type": "input_audio_buffer.append", "audio": "p1"}),
    ]
    out = order.to_upstream(sent)
    assert out[0] == SendUpstream({"type": "conversation.item.retrieve", "item_id": "u1"})
    assert isinstance(out[1], ForwardUpstream)
    assert json.loads(out[1].raw)["item_id"] == "u1"
    assert out[2] == sent[2]  # audio is never read for ids


def test_a_proxy_stop_before_the_commit_goes_out_as_it_is() -> None:
    order = UserTurnOrder()
    events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    stop = {"type": "input_audio_buffer.speech_stopped", "item_id": "p1", "audio_end_ms": 900}
    assert events(order, [stop]) == [stop]
    out = events(order, upstream_commit("u1", "a0"))
    assert kinds(out) == ["committed", "added", "created", "done"]
    assert {ev.get("item_id", ev.get("item", {}).get("id")) for ev in out} == {"p1"}


def test_a_client_created_item_is_not_held() -> None:
    order = UserTurnOrder()
    text = {
        "type": "conversation.item.added",
        "item": {"id": "c1", "role": "user", "content": [{"type": "input_text", "text": "x"}]},
    }
    assert events(order, [text]) == [text]


def test_a_push_to_talk_commit_comes_before_its_item() -> None:
    order = UserTurnOrder()
    out = events(order, upstream_commit("u1", None))
    assert kinds(out) == ["committed", "added", "created", "done"]
    assert {ev.get("item_id", ev.get("item", {}).get("id")) for ev in out} == {"u1"}


def test_the_ids_told_move_with_the_session_to_another_replica() -> None:
    """A replica that takes the session over names an earlier barge-in's item as the
    client was told, both ways."""
    sc = make()
    assert isinstance(sc.s, GaRelaySession)
    order = sc.s.turn_order
    events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    events(order, upstream_commit("u1", "a0"), end_ms=4321)
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    moved = make(bound=False)
    assert isinstance(moved.s, GaRelaySession)
    moved.s.restore(snap)
    later = events(
        moved.s.turn_order, [{"type": "conversation.item.retrieved", "item": user_item("u1")}]
    )
    assert later[0]["item"]["id"] == "p1"
    up = moved.s.turn_order.to_upstream(
        [SendUpstream({"type": "conversation.item.delete", "item_id": "p1"})]
    )
    assert isinstance(up[0], SendUpstream) and up[0].event["item_id"] == "u1"
