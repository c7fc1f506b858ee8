"""One user turn, as a GA client reads it, in the emulated modes (official ``openai`` SDK).

GA tells a user turn as ``speech_started`` (item X), ``speech_stopped`` (X),
``input_audio_buffer.committed`` (X, previous_item_id), ``conversation.item.added`` /
``done`` (X), and only then the response. Clients (the Agents SDK, the realtime
console) correlate these by item id, so the proxy's own announcement of a barge-in
and the upstream's commit of that same turn must name one item, in that order
(``docs/protocol.md``, "One user turn, one item id").
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.openai_sdk_client import (
    MODES,
    events_for,
    first_session_created,
    pcm_session,
    sdk_connection,
    until,
)
from tests.openai_sdk_turns import answer_playing, speak_at_pace
from tests.servers import load_clip, silence

STARTED = "input_audio_buffer.speech_started"
STOPPED = "input_audio_buffer.speech_stopped"
COMMITTED = "input_audio_buffer.committed"
ADDED = "conversation.item.added"


def first_index(events: list[dict[str, Any]], start: int, match: Any) -> int:
    for i in range(start, len(events)):
        if match(events[i]):
            return i
    raise AssertionError(f"not found after {start}: {[e['type'] for e in events[start:]]}")


def assert_turn_in_ga_order(events: list[dict[str, Any]], started_at: int) -> str:
    """The turn announced at ``events[started_at]`` goes on in GA order under one id."""
    kinds = [e["type"] for e in events]
    item = events[started_at]["item_id"]
    stop = first_index(events, started_at + 1, lambda e: e["type"] == STOPPED)
    assert events[stop]["item_id"] == item, (events[started_at], events[stop])
    commit = first_index(events, started_at + 1, lambda e: e["type"] == COMMITTED)
    assert stop < commit, kinds[started_at:]
    assert events[commit]["item_id"] == item, (events[started_at], events[commit])
    added = first_index(
        events, started_at + 1, lambda e: e["type"] == ADDED and e["item"]["role"] == "user"
    )
    assert commit < added, kinds[started_at:]
    assert events[added]["item"]["id"] == item, (events[started_at], events[added])
    answer = first_index(events, commit, lambda e: e["type"] == "response.created")
    assert added < answer, kinds[started_at:]
    for between in events[started_at + 1 : answer]:
        assert between["type"] != STARTED, kinds[started_at:]  # one turn, told once
    return str(item)


def assert_ids_known(events: list[dict[str, Any]]) -> None:
    """Every item id an event names is one the client was told of first."""
    known: set[str] = set()
    for ev in events:
        item = ev.get("item")
        if ev["type"] == STARTED:
            known.add(ev["item_id"])
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            known.add(item["id"])
        if ev["type"] in (COMMITTED, ADDED, "conversation.item.done"):
            previous = ev.get("previous_item_id")
            assert previous is None or previous in known, (ev, sorted(known))
        if ev["type"] in (STOPPED, COMMITTED):
            assert ev["item_id"] in known, (ev, sorted(known))


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_an_ordinary_turn_is_told_in_ga_order_under_one_id(kind: str, mode: str) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session())
        await until(conn, "session.updated")
        talk = asyncio.create_task(
            speak_at_pace(conn, load_clip("utt05_clean.wav") + silence(1200))
        )
        events = await until(conn, "response.done")
        await talk
        started = [i for i, e in enumerate(events) if e["type"] == STARTED]
        assert len(started) == 1, [e["type"] for e in events]
        assert_turn_in_ga_order(events, started[0])
        assert_ids_known(events)


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_barge_in_turn_is_told_in_ga_order_under_one_id(kind: str, mode: str) -> None:
    """The repro: a user speaking over a long answer about a second into it."""
    async with sdk_connection(kind, reply_ms=8000) as conn:
        events = await answer_playing(conn)
        cut_from = len(events)
        talk = asyncio.create_task(
            speak_at_pace(conn, load_clip("utt04_clean.wav") + silence(1200))
        )
        events += await until(conn, "response.done")
        assert events[-1]["response"]["status"] == "cancelled", events[-1]["response"]
        await talk
        events += await until(conn, "response.created")
        events += await events_for(conn, 1.0)
        started = [i for i, e in enumerate(events) if e["type"] == STARTED and i >= cut_from]
        assert started, [e["type"] for e in events[cut_from:]]
        cut = first_index(events, cut_from, lambda e: e["type"] == "response.done")
        assert started[0] < cut, [e["type"] for e in events[cut_from:]]  # told, then cut
        item = assert_turn_in_ga_order(events, started[0])
        assert_ids_known(events)
        if mode != "barge_in_emulated":
            return  # a turn-based upstream keeps no user items to read (docs/protocol.md)
        # The item is the client's to read and delete by the id it was told.
        await conn.conversation.item.retrieve(item_id=item)
        retrieved = await until(conn, "conversation.item.retrieved")
        assert retrieved[-1]["item"]["id"] == item, retrieved[-1]
        await conn.conversation.item.delete(item_id=item)
        deleted = await until(conn, "conversation.item.deleted")
        assert deleted[-1]["item_id"] == item, deleted[-1]
        assert "error" not in [e["type"] for e in retrieved + deleted], retrieved + deleted
