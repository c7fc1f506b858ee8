"""``shim/snapshot_clock.py``'s ``to_wall`` copies only what it converts: the result is
what converting a deep copy gives, and the snapshot handed in is left as it was. (One
entry listed twice, which no session writes, is the exception: the deep copy kept the
two as one and shifted it twice.)"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from shim import idle_timeout, played_snapshot, snapshot_clock
from tests.shim_idle_script import odd_answer, turn_based


def _deep_then_converted(snap: dict[str, Any], offset_ms: float) -> dict[str, Any]:
    """What ``to_wall`` gave before: the whole snapshot deep-copied, then converted."""
    out = copy.deepcopy(snap)
    snapshot_clock._each_time(out, lambda t: round(t + offset_ms, 3))
    out[snapshot_clock.KEY] = dict(snapshot_clock.WALL)
    return out


def _odd_snapshots() -> list[dict[str, Any]]:
    """Real snapshots of a session with answers, and hand-made ones with the shapes a
    stored or foreign snapshot may have (no times, odd entries, bools, missing parts)."""
    sc = turn_based(5000)
    real = [sc.s.snapshot()]
    for _ in range(2):
        odd_answer(sc)
        real.append(sc.s.snapshot())
    played, idle = played_snapshot.KEY, idle_timeout.KEY
    base = real[-1]
    return [
        *real,
        {**base, played: [{"item_id": "a", "play_end_ms": True}, "junk", {"item_id": "b"}]},
        {**base, played: [{"play_end_ms": None}, {"play_end_ms": 12.25}], idle: "junk"},
        {**base, idle: {"since_ms": 5.0, "away_ms": "x"}},
        {k: v for k, v in base.items() if k not in (played, idle)},
        {**base, played: {"not": "a list"}},
    ]


def test_to_wall_gives_what_the_deep_copy_gave_and_leaves_its_input() -> None:
    for snap in _odd_snapshots():
        before = orjson.dumps(snap, option=orjson.OPT_SORT_KEYS)
        want = _deep_then_converted(snap, 1_700_000_000_123.4567)
        got = snapshot_clock.to_wall(snap, 1_700_000_000_123.4567)
        assert got == want
        assert orjson.dumps(got) == orjson.dumps(want)  # the same bytes, in the same order
        assert orjson.dumps(snap, option=orjson.OPT_SORT_KEYS) == before  # untouched
        # and a later conversion of the result does not reach back into the input
        snapshot_clock._each_time(got, lambda t: -1.0)
        assert orjson.dumps(snap, option=orjson.OPT_SORT_KEYS) == before


def test_an_entry_listed_twice_is_shifted_once_in_each_place() -> None:
    entry = {"item_id": "a", "play_end_ms": 10.0}
    snap = {played_snapshot.KEY: [entry, entry]}
    got = snapshot_clock.to_wall(snap, 1.0)
    assert [e["play_end_ms"] for e in got[played_snapshot.KEY]] == [11.0, 11.0]
    assert _deep_then_converted(snap, 1.0)[played_snapshot.KEY][0]["play_end_ms"] == 12.0
    assert entry == {"item_id": "a", "play_end_ms": 10.0}
