"""The bounded ordered id set the session's remembered ids share (``shim/bounded_ids.py``)."""

from __future__ import annotations

from shim.bounded_ids import BoundedIds


def test_the_oldest_go_first_and_an_id_added_again_keeps_its_place() -> None:
    ids = BoundedIds(3)
    assert [ids.add(i) for i in ("a", "b", "c", "a", "d")] == [True, True, True, False, True]
    assert list(ids) == ["b", "c", "d"] and "a" not in ids and len(ids) == 3


def test_a_discarded_id_frees_its_characters() -> None:
    ids = BoundedIds(10, max_chars=6)
    ids.add("aaa")
    ids.add("bbb")
    ids.discard("aaa")
    ids.discard("zzz")  # not kept: nothing changes
    ids.discard(5)
    ids.add("ccc")
    assert list(ids) == ["bbb", "ccc"]
    ids.add("dddddddd")  # over the bound alone: the newest is still kept
    assert list(ids) == ["dddddddd"]
