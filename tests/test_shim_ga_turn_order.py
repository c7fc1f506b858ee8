"""``shim/dialects/ga_turn_order.py``: one user turn, one item id, in GA order."""

from __future__ import annotations

import json
from typing import Any

import orjson

from shim.actions import Action, ForwardUpstream, SendClient, SendUpstream
from shim.dialects import ga_events
from shim.dialects.ga_relay import GaRelaySession
from shim.dialects.ga_turn_order import CREATED_KEPT, UserTurnOrder
from tests.shim_ga_resumable import make


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


# One user turn as GA tells it (vLLM-Omni's conversation.item.created beside added).
GA_TURN = ["speech_started", "speech_stopped", "committed", "added", "created", "done"]


def named(evs: list[dict[str, Any]]) -> set[Any]:
    """The item ids the events name (their own, or their item's)."""
    return {ev.get("item_id", ev.get("item", {}).get("id")) for ev in evs}


def kinds(evs: list[dict[str, Any]]) -> list[str]:
    return [str(ev["type"]).rsplit(".", 1)[-1] for ev in evs]


def test_an_upstream_turn_is_committed_before_its_item_is_added() -> None:
    order = UserTurnOrder()
    out = events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "u1"}])
    out += events(order, [{"type": "input_audio_buffer.speech_stopped", "item_id": "u1"}])
    out += events(order, upstream_commit("u1", "a0"))
    assert kinds(out) == GA_TURN
    assert named(out) == {"u1"}


def test_a_told_barge_in_names_the_upstreams_item_as_told_and_stops_before_its_commit() -> None:
    order = UserTurnOrder()
    told = events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    out = events(order, upstream_commit("u1", "a0"), end_ms=4321)
    assert kinds(told + out) == GA_TURN
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
    assert named(out) == {"p1"}


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
    assert named(out) == {"u1"}


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


def test_a_start_naming_no_item_opens_no_turn_and_maps_no_empty_id() -> None:
    """vLLM-Omni's own ``speech_started`` has ``item_id`` null, told as "" (``ga_events``):
    the upstream's item keeps its id, and "" is never renamed either way."""
    order = UserTurnOrder()
    started = ga_events.translate(
        {"type": "input_audio_buffer.speech_started", "audio_start_ms": 0, "item_id": None}
    )
    assert started is not None and started["item_id"] == ""
    events(order, [started])
    out = events(order, upstream_commit("u1", "a0"))
    assert kinds(out) == ["committed", "added", "created", "done"]
    assert named(out) == {"u1"}
    raw = json.dumps({"type": "response.create", "response": {"instructions": ""}})
    update = {"type": "session.update", "session": {"instructions": ""}}
    sent = order.to_upstream([ForwardUpstream(raw), SendUpstream(update)])
    assert sent == [ForwardUpstream(raw), SendUpstream(update)]
    assert order.wire().get("turn_ids") is None


def test_a_start_naming_no_item_leaves_the_told_turn_open() -> None:
    order = UserTurnOrder()
    events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    events(order, [{"type": "input_audio_buffer.speech_started", "item_id": ""}])
    out = events(order, upstream_commit("u1", "a0"))
    assert named(out) == {"p1"}


def test_the_proxys_stop_between_the_item_and_its_commit_goes_out_ahead_of_the_item() -> None:
    order = UserTurnOrder()
    out = events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    commit = upstream_commit("u1", "a0")
    out += events(order, commit[:2])
    out += events(order, [{"type": "input_audio_buffer.speech_stopped", "item_id": "p1"}])
    out += events(order, commit[2:])
    assert kinds(out) == GA_TURN
    assert named(out) == {"p1"}


def client_create(order: UserTurnOrder, iid: str, forwarded: bool) -> None:
    """The client's own ``conversation.item.create`` of audio input, on its way upstream."""
    ev = {"type": "conversation.item.create", "item": user_item(iid)}
    action = ForwardUpstream(json.dumps(ev)) if forwarded else SendUpstream(ev)
    assert order.to_upstream([action]) == [action]


def test_a_client_created_audio_item_during_a_told_turn_keeps_its_id() -> None:
    for forwarded in (False, True):
        order = UserTurnOrder()
        events(order, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
        client_create(order, "c1", forwarded)
        mine = {
            "type": "conversation.item.added",
            "previous_item_id": "a0",
            "item": user_item("c1"),
        }
        assert events(order, [mine]) == [mine]
        # The turn's own item is still the told one's.
        out = events(order, upstream_commit("u1", "c1"))
        assert kinds(out) == ["speech_stopped", "committed", "added", "created", "done"]
        assert named(out) == {"p1"}


def test_a_client_created_audio_item_with_no_turn_open_is_not_held() -> None:
    order = UserTurnOrder()
    client_create(order, "c1", forwarded=True)
    mine = {"type": "conversation.item.added", "previous_item_id": None, "item": user_item("c1")}
    assert events(order, [mine]) == [mine]


def test_the_client_created_ids_kept_are_bounded() -> None:
    order = UserTurnOrder()
    for n in range(CREATED_KEPT + 10):
        client_create(order, f"c{n}", forwarded=False)
    assert len(order.created) == CREATED_KEPT and "c0" not in order.created


def moved(sc: Any) -> GaRelaySession:
    """A replica that took over ``sc``'s session from its snapshot."""
    assert isinstance(sc.s, GaRelaySession)
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    other = make(bound=False)
    assert isinstance(other.s, GaRelaySession)
    other.s.restore(snap)
    return other.s


def test_a_held_user_item_moves_with_the_session() -> None:
    """The upstream's replay point is past the held item: the replica that takes the
    session over tells it, after its commit."""
    sc = make()
    out = sc.upstream(
        {"type": "conversation.item.added", "item": user_item("u1"), "server_event_seq": 5}
    )
    assert [a for a in out if isinstance(a, SendClient)] == []  # held for its commit
    there = moved(sc).turn_order
    out2 = events(there, [{"type": "input_audio_buffer.committed", "item_id": "u1"}])
    assert kinds(out2) == ["committed", "added"] and out2[1]["item"]["id"] == "u1"


def test_an_open_told_turn_moves_with_the_session() -> None:
    sc = make()
    assert isinstance(sc.s, GaRelaySession)
    here = sc.s.turn_order
    events(here, [{"type": "input_audio_buffer.speech_started", "item_id": "p1"}])
    commit = upstream_commit("u1", "a0")
    events(here, commit[:2])
    client_create(here, "c1", forwarded=False)
    there = moved(sc).turn_order
    assert there.created == {"c1": None}
    out = events(there, commit[2:], end_ms=700)
    assert kinds(out) == ["speech_stopped", "committed", "added", "created", "done"]
    assert named(out) == {"p1"}
    assert there.open is None and there.closed == "p1" and not there.held
