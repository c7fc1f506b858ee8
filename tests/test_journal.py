"""Sequencing, replay bounds and client event de-duplication (shim/journal.py)."""

from __future__ import annotations

import sys

import orjson
from hypothesis import given
from hypothesis import strategies as st

from shim.journal import Journal, RecentIds


def test_stamp_adds_id_and_monotonic_seq_as_last_key() -> None:
    j = Journal("ab", max_bytes=10_000, max_age_ms=60_000)
    texts = [j.stamp({"type": "x", "n": i}, now_ms=0) for i in range(3)]
    events = [orjson.loads(t) for t in texts]
    assert [e["server_event_seq"] for e in events] == [1, 2, 3]
    assert list(events[0])[-1] == "server_event_seq"
    assert len({e["event_id"] for e in events}) == 3


def test_ack_trims_and_replay_after_returns_the_rest_in_order() -> None:
    j = Journal("ab", max_bytes=10_000, max_age_ms=60_000)
    for i in range(5):
        j.stamp({"type": "x", "n": i}, now_ms=0)
    assert j.ack(2)
    replay = j.after(2, now_ms=0)
    assert replay is not None
    assert [orjson.loads(t)["n"] for t in replay] == [2, 3, 4]
    assert j.after(1, now_ms=0) is None  # acked and gone: a gap, never a partial replay
    assert not j.ack(99)


def test_bounds_by_bytes_and_age_open_a_gap() -> None:
    j = Journal("ab", max_bytes=600, max_age_ms=1000)
    for i in range(20):
        j.stamp({"type": "x", "pad": "y" * 20, "n": i}, now_ms=i)
    assert j.size_bytes <= 600
    assert j.after(0, now_ms=20) is None
    head = j.seq
    j.stamp({"type": "late"}, now_ms=5000)
    assert j.after(head, now_ms=5000) is not None
    assert len(j.entries()) == 1  # the old ones aged out


@given(
    st.lists(
        st.one_of(st.sampled_from(["a", "b", "c", "d", "e"]), st.just("reconnect")),
        max_size=60,
    )
)
def test_recent_ids_drop_an_earlier_connections_id_once(steps: list[str]) -> None:
    """Dropped: an id applied on an earlier connection, the first time it comes on
    this one. Applied: a new id, and any id met on this connection already."""
    recent = RecentIds(limit=10)
    recent.new_connection()
    earlier: set[str] = set()
    here: set[str] = set()
    for step in steps:
        if step == "reconnect":
            recent.new_connection()
            earlier |= here
            here = set()
            continue
        assert recent.seen(step) == (step in earlier and step not in here), step
        here.add(step)


def test_a_tag_reused_on_one_connection_is_applied_each_time() -> None:
    recent = RecentIds(limit=10)
    recent.new_connection()
    assert [recent.seen("evt_append") for _ in range(3)] == [False, False, False]
    recent.new_connection()  # the client reconnects and re-sends its last append
    assert [recent.seen("evt_append") for _ in range(3)] == [True, False, False]


def test_ids_restored_before_a_connection_count_as_earlier() -> None:
    recent = RecentIds(limit=10)
    for event_id in ("x", "y"):  # from the store, as a resume on another replica finds them
        recent.seen(event_id)
    recent.new_connection()
    assert recent.seen("x") and recent.seen("y")
    assert not recent.seen("x"), "dropped once"
    assert not recent.seen("z")


def test_recent_ids_hold_at_most_their_characters_the_newest_always() -> None:
    recent = RecentIds(limit=100, max_chars=100)
    for i in range(10):
        assert not recent.seen(f"{i}" * 30)
    assert recent.items() == ["7" * 30, "8" * 30, "9" * 30]
    assert not recent.seen("x" * 500)  # over the bound alone: still the one kept
    assert recent.items() == ["x" * 500]
    recent.new_connection()
    assert recent.seen("x" * 500), "kept: re-sent on the next connection, dropped"
    assert RecentIds(limit=256).items() == []  # the default bound: 256 ids of 1 KiB
    default = RecentIds(limit=256)
    for i in range(256):
        default.seen(f"{i:04d}" + "a" * 1020)
    assert len(default.items()) == 256
    default.seen("b" * 1024)
    assert len(default.items()) == 256


def _in_memory(j: Journal) -> int:
    """What the log's entries really hold: each text object, each entry and its fields."""
    return sum(
        sys.getsizeof(e.text) + sys.getsizeof(e) + sys.getsizeof(e.at_ms) + sys.getsizeof(e.seq)
        for e in j.entries()
    )


def test_many_small_events_are_bounded_by_what_they_hold() -> None:
    j = Journal("ab", max_bytes=10_000, max_age_ms=60_000)
    for i in range(2000):
        j.stamp({"type": "x", "n": i}, now_ms=0)
    assert _in_memory(j) <= j.size_bytes <= 10_000


def test_non_ascii_text_is_bounded_by_its_bytes_not_its_characters() -> None:
    j = Journal("ab", max_bytes=50_000, max_age_ms=60_000)
    for i in range(100):
        j.stamp({"type": "response.output_audio_transcript.delta", "delta": "話" * 500}, now_ms=i)
    assert _in_memory(j) <= j.size_bytes <= 50_000
    assert sum(len(e.text.encode()) for e in j.entries()) <= 50_000
