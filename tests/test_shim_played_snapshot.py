"""The played items' part of the snapshot (``shim/played_snapshot.py``) round-trips who
told the client of a cut, so a truncate after the move never grows a told cut back."""

from __future__ import annotations

from typing import Any

import orjson

from shim import played_snapshot
from tests.shim_edge_scripts import start_turn, turn_based
from tests.shim_ga_relay_script import truncate
from tests.shim_script import client_events


def moved(snap: dict[str, Any]) -> Any:
    """A session restored from ``snap`` as ``proxy/resume/from_store.py`` does it."""
    sc = turn_based()
    played_snapshot.restore(sc.s.ledger, snap)
    sc.s.restore(snap)
    return sc


def stored(sc: Any) -> dict[str, Any]:
    return dict(orjson.loads(orjson.dumps(sc.s.snapshot())))


def test_a_cut_the_proxy_told_is_still_its_after_a_move_not_grown() -> None:
    """The client's truncate past it, on the replica that took over, is the truncation
    already told (nothing told again, no error), not a longer item."""
    sc = turn_based()
    start_turn(sc, audio_ms=1000)
    sc.now += 300
    out = client_events(sc.speak([0.9] * 40))  # a barge-in: the proxy cuts and tells where
    [told] = [e for e in out if e["type"] == "conversation.item.truncated"]
    after = moved(stored(sc))
    again = client_events(after.client(truncate(told["item_id"], told["audio_end_ms"] + 200)))
    assert again == [], again
    item = after.s.ledger.get(told["item_id"])
    assert item is not None and item.truncated_ms == told["audio_end_ms"]


def test_a_cut_the_client_told_is_not_grown_after_a_move() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=1000)
    sc.upstream({"type": "response.output_audio.done"})
    item = sc.s.ledger.latest()
    assert item is not None
    sc.client(truncate(item.item_id, 400))
    after = moved(stored(sc))
    [err] = [e for e in client_events(after.client(truncate(item.item_id, 900)))]
    assert err["type"] == "error" and err["error"]["param"] == "audio_end_ms", err
    assert after.s.ledger.get(item.item_id).truncated_ms == 400


def test_a_snapshot_stored_without_who_told_still_loads() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=1000)
    sc.upstream({"type": "response.output_audio.done"})
    item = sc.s.ledger.latest()
    assert item is not None
    sc.client(truncate(item.item_id, 400))
    snap = stored(sc)
    for entry in snap[played_snapshot.KEY]:
        entry.pop("told_by", None)
    after = moved(snap)
    got = after.s.ledger.get(item.item_id)
    assert got is not None and got.truncated_ms == 400 and got.told_by is None
