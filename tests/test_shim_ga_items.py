"""A GA client's conversation items in the emulated modes, by script: the user's own
audio item is retrieved, a truncated item never grows back, and a client's
``response.cancel`` then ``conversation.item.truncate`` tell one truncation, the
client's. Every event the client gets is checked against the ``openai`` SDK's GA types."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from shim.actions import Action
from tests.shim_edge_scripts import TURN, errors, start_turn, the, turn_based
from tests.shim_ga_relay_script import answer, make, truncate
from tests.shim_script import client_events, types

GA: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)


def ga(actions: list[Action]) -> list[dict[str, Any]]:
    events = client_events(actions)
    for event in events:
        GA.validate_python({"event_id": "event_1", **event})  # the edge adds the id
    return events


def test_duplex_emulated_retrieves_the_users_own_audio_item() -> None:
    sc = turn_based()
    out = ga(sc.speak(TURN))
    user = the(out, "input_audio_buffer.committed")["item_id"]
    got = the(
        ga(sc.client({"type": "conversation.item.retrieve", "item_id": user})),
        "conversation.item.retrieved",
    )
    assert got["item"]["id"] == user and got["item"]["role"] == "user"
    assert got["item"]["content"][0]["type"] == "input_audio"
    (err,) = errors(sc.client({"type": "conversation.item.retrieve", "item_id": "item_nope"}))
    assert err["code"] == "item_retrieve_invalid_item_id"


def test_a_second_truncate_to_a_later_point_is_refused_and_the_item_stays_cut() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=1000)
    sc.upstream({"type": "response.output_audio.done"})
    item = sc.s.ledger.latest()
    assert item is not None
    assert (
        the(ga(sc.client(truncate(item.item_id, 400))), "conversation.item.truncated")[
            "audio_end_ms"
        ]
        == 400
    )
    (err,) = errors(sc.client(truncate(item.item_id, 900)))
    assert err["code"] == "invalid_value" and err["param"] == "audio_end_ms"
    assert item.truncated_ms == 400
    assert (
        the(ga(sc.client(truncate(item.item_id, 300))), "conversation.item.truncated")[
            "audio_end_ms"
        ]
        == 300
    )


def test_over_a_duplex_upstream_a_truncated_item_never_grows_back_either() -> None:
    sc = make()
    answer(sc, chunks=10)
    sc.now += 2000
    item = sc.s.ledger.latest()
    assert item is not None
    sc.client(truncate(item.item_id, 300))
    out = sc.client(truncate(item.item_id, 800))
    (err,) = errors(out)
    assert err["code"] == "invalid_value"
    assert not [a for a in out if type(a).__name__ == "SendUpstream"], "nothing goes upstream"
    assert item.truncated_ms == 300


@pytest.mark.parametrize("past_ms", [0, 200])
def test_a_cut_the_proxy_told_is_told_once_and_not_grown(past_ms: int) -> None:
    """A GA client's truncate at or past the cut the proxy told (sent as it stopped
    playing) is that truncation: no second ``conversation.item.truncated``, no error."""
    sc = turn_based()
    start_turn(sc, audio_ms=1000)
    sc.now += 300
    out = ga(sc.speak([0.9] * 40))  # a barge-in: the proxy cuts and tells where
    told = the(out, "conversation.item.truncated")
    again = ga(sc.client(truncate(told["item_id"], told["audio_end_ms"] + past_ms)))
    assert again == []
    item = sc.s.ledger.get(told["item_id"])
    assert item is not None and item.truncated_ms == told["audio_end_ms"]


def test_a_truncate_before_the_cut_the_proxy_told_is_a_new_one() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=1000)
    sc.now += 300
    told = the(ga(sc.speak([0.9] * 40)), "conversation.item.truncated")
    earlier = told["audio_end_ms"] - 50
    again = ga(sc.client(truncate(told["item_id"], earlier)))
    assert the(again, "conversation.item.truncated")["audio_end_ms"] == earlier


def test_cancel_then_truncate_tells_one_truncation_the_clients() -> None:
    sc = turn_based()
    rid = start_turn(sc, audio_ms=1000)
    sc.now += 200  # the playback clock says ~200 ms were heard; the client heard 600
    cancelled = ga(sc.client({"type": "response.cancel", "response_id": rid}))
    assert "conversation.item.truncated" not in types_of(cancelled)
    item = the(cancelled, "response.done")["response"]["output"][0]["id"]
    out = ga(sc.client(truncate(item, 600)))
    assert [e["audio_end_ms"] for e in out if e["type"] == "conversation.item.truncated"] == [600]
    assert not errors(out)


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


__all__ = ["types"]
