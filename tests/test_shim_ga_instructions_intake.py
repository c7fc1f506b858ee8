"""What decides whether a duplex upstream has fixed a GA client's instructions
(``shim/dialects/relay_context_lock.py``) beyond a turn: silence the upstream drops,
the session's seeded text, the proxy's own items for a fresh session, and a move to
another replica (the snapshot's ``upstream_intake``)."""

from __future__ import annotations

import orjson

from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_ga_instructions_lock import (
    FRESH,
    RESUMED,
    USER_TEXT,
    changes,
    make_with,
    moved,
    update,
)
from tests.shim_ga_resumable import ga, make
from tests.shim_script import upstream_events

AUTO = {"instructions": "be kind", "extra_body": {"auto_response": True}}


def test_silence_committed_and_answered_leaves_them_free() -> None:
    # engine/duplex/session/runner.py (_on_append_audio): a session that does not
    # auto-respond drops an append under overlap_silence_rms, so the commit finds
    # input_audio_buffer_empty and the response.create response_create_without_input.
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200, amplitude=0)  # a muted microphone
    sc.audio(200, amplitude=40)  # a quiet room: rms 0.0012
    sc.client({"type": "input_audio_buffer.commit"})
    sc.client({"type": "response.create"})
    assert changes(sc)
    sc.voice(200)  # speech is buffered: answered, it locks them
    sc.client({"type": "input_audio_buffer.commit", "response_create": True})
    assert not changes(sc, "again")


def test_an_auto_responding_commit_over_silence_locks_them() -> None:
    # Auto-responding, silence is buffered too, and a commit answers what it holds:
    # Nemotron VoiceChat and PersonaPlex pad a part unit and hand it to the model.
    sc = make_with(chunk_period_ms=80)
    update(sc, AUTO)
    sc.audio(40, amplitude=0)
    assert changes(sc)
    sc.client({"type": "input_audio_buffer.commit"})
    assert not changes(sc, "again")


def test_a_seeded_session_locks_at_its_first_response_create() -> None:
    # engine/duplex/session/engine_session.py (__post_init__): initial_user_text is a
    # user item from the opening, which a text-only turn answers.
    sc = make_with(supports_text_only_turn=True)
    seed = {"initial_user_text": "Greet the caller."}
    sc.s.upstream_audio.stated(seed, opening=True)  # the route's (shim_setup.py)
    update(sc, {"instructions": "triage"})
    assert changes(sc)
    sc.client({"type": "response.create"})
    assert not changes(sc, "again")


def test_a_seed_in_a_live_update_is_no_user_item() -> None:
    # engine/duplex/config.py (apply_realtime_update) leaves initial_user_text as the
    # session opened with it: no new item, and a bare response.create finds no input.
    sc = make_with(supports_text_only_turn=True)
    update(sc, {"instructions": "triage", "initial_user_text": "Greet the caller."})
    sc.client({"type": "response.create"})  # response_create_without_input upstream
    assert changes(sc)


def test_the_items_given_a_fresh_session_make_a_text_turn() -> None:
    sc = make_with(supports_text_only_turn=True)
    update(sc, {"instructions": "triage"})
    item = {**USER_TEXT["item"], "id": "item_u1"}
    sc.client({**USER_TEXT, "item": item})
    sc.upstream({"type": "conversation.item.done", "item": item})
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    out = sc.s.handle(UpstreamReattached(FRESH, sc.now))
    given = [e for e in upstream_events(out) if e["type"] == "conversation.item.create"]
    assert [e["item"]["role"] for e in given] == ["user"]
    assert changes(sc)  # the fresh session has taken no turn yet
    sc.client({"type": "response.create"})  # a text-only turn over the given item
    assert not changes(sc, "again")


def test_a_clients_auto_response_survives_a_move() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, AUTO)
    m = moved(sc)
    m.audio(100)  # a whole 80 ms unit: the resumed session hands it to its model
    assert not changes(m)


def test_a_part_unit_before_a_move_counts() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, AUTO)
    sc.audio(60)
    assert changes(sc)
    m = moved(sc)
    m.audio(40)  # 100 ms since the last commit upstream: a whole unit taken
    assert not changes(m, "again")


def test_committed_speech_before_a_move_is_answered_after_it() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.voice(200)
    sc.client({"type": "input_audio_buffer.commit"})
    m = moved(sc)
    assert changes(m)
    m.client({"type": "response.create"})
    assert not changes(m, "again")


def test_a_fresh_session_after_a_move_keeps_only_the_clients_auto_response() -> None:
    sc = make_with(chunk_period_ms=80)
    update(sc, AUTO)
    sc.audio(60)
    m = moved(sc, resumed=None)
    m.s.handle(UpstreamReattached(FRESH, m.now))
    m.audio(40)  # the fresh session has only these 40 ms
    assert changes(m)
    m.audio(40)
    assert not changes(m, "again")


def test_a_snapshot_without_the_intake_still_loads() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    del snap["upstream_intake"]
    m = make_with()
    ga(m).restore(snap, RESUMED, now=sc.now)
    assert changes(m)
