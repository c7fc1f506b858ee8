"""The conversation the barge-in relay keeps for a fresh upstream session is bounded
in characters as well as items (``shim/dialects/relay_talk.py``)."""

from __future__ import annotations

from shim.dialects.relay_talk import HISTORY_CHARS, HISTORY_KEPT, ITEM_CHARS, Talk
from shim.playback import PlaybackLedger


def _done(talk: Talk, iid: str, text: str) -> None:
    item = {"id": iid, "role": "user", "content": [{"type": "input_text", "text": text}]}
    talk.on_item_event("conversation.item.done", item, PlaybackLedger())


def test_huge_text_items_are_clipped_and_the_oldest_let_go_past_the_character_bound() -> None:
    talk = Talk()
    for i in range(HISTORY_KEPT):
        _done(talk, f"item_{i}", "x" * (1024 * 1024))  # a client's 1 MB text items
    kept = talk.items
    assert all(len(text) <= ITEM_CHARS for _, text in kept.values())
    assert sum(len(text) for _, text in kept.values()) <= HISTORY_CHARS
    assert list(kept)[-1] == f"item_{HISTORY_KEPT - 1}"  # the newest stays
    assert len(kept) == HISTORY_CHARS // ITEM_CHARS


def test_small_items_are_bounded_by_count_and_given_in_order() -> None:
    talk = Talk()
    for i in range(HISTORY_KEPT + 5):
        _done(talk, f"item_{i}", f"turn {i}")
    assert len(talk.items) == HISTORY_KEPT
    given = [a.event["item"]["id"] for a in talk.give()]
    assert given == [f"item_{i}" for i in range(5, HISTORY_KEPT + 5)]
