"""barge_in_emulated by script: a session moved by snapshot, or given a fresh upstream session:
the response carried on or ended incomplete, the conversation so far given and kept as
heard, held audio replayed, a held end moved as still open, a playback end to report
moved."""

from __future__ import annotations

from shim.inputs import UpstreamLost, UpstreamReattached
from shim.snapshot import upstream_binding
from tests.duplex_relay_script import (
    AID,
    RID,
    UP,
    acks,
    audio_delta,
    cut_an_answer,
    make,
    play_response,
    relay,
    start_response,
)
from tests.shim_script import client_events, types, upstream_events


def test_a_snapshot_restored_with_its_upstream_resumed_carries_the_response_on() -> None:
    sc = make()
    start_response(sc, chunks=3)  # upstream seqs 10..16
    cut_rid = "resp-cut"
    relay(sc).cancelled_ids.append(cut_rid)
    snap = sc.s.snapshot()
    moved = make(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    out = relay(moved).restore(snap, resumed, now=5000.0)
    assert not types(out), "not ended: the upstream session came back"
    assert upstream_binding(moved.s.snapshot()) == (UP, "tok-2", 16)
    resp = moved.s.response
    assert resp is not None and resp.response_id == RID
    assert resp.playback is not None and resp.playback.transcript == "word word word "
    assert not moved.upstream(
        {"type": "response.output_audio.delta", "response_id": cut_rid, "delta": ""}
        | {"server_event_seq": 17}
    ), "a response cut before the move stays cut"
    done = moved.upstream(
        {"type": "response.done", "response": {"id": RID, "status": "completed"}}
        | {"server_event_seq": 18}
    )
    assert types(done) == ["response.done"]


def test_a_snapshot_restored_on_a_fresh_upstream_ends_the_response_incomplete() -> None:
    sc = make()
    start_response(sc, chunks=2)
    out = make(bound=False).s.restore(sc.s.snapshot())
    (done,) = [e for e in client_events(out) if e["type"] == "response.done"]
    assert done["response"]["status"] == "incomplete"


def test_a_playback_end_still_to_report_moves_with_the_session() -> None:
    sc = make()
    cut_an_answer(sc)  # the proxy acks what was heard: the upstream now goes by acks
    play_response(sc, "resp-2", deltas=8)  # generated in full, still playing
    moved = make(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    assert not types(relay(moved).restore(sc.s.snapshot(), resumed, now=9000.0))
    moved.now = 9000.0
    (ack,) = acks(moved.tick(100))
    assert (ack["response_id"], ack["played_ms"]) == ("resp-2", 800)


def item_done(iid: str, role: str, part: dict) -> dict:  # type: ignore[type-arg]
    return {"type": "conversation.item.done", "item": {"id": iid, "role": role, "content": [part]}}


def test_a_fresh_upstream_session_is_given_the_conversation_so_far() -> None:
    sc = make()
    sc.upstream(item_done("u1", "user", {"type": "input_audio", "transcript": "hello there"}))
    sc.upstream(
        item_done(f"item_{RID}", "assistant", {"type": "output_audio", "transcript": "hi, how"})
    )
    sc.upstream(item_done("u2", "user", {"type": "input_text", "text": "tell me more"}))
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    fresh = {"type": "session.created", "session": {"id": "duplex-up-2"}, "resume_token": "t"}
    given = upstream_events(sc.s.handle(UpstreamReattached(fresh, sc.now)))
    assert [(e["type"], e["item"]["id"], e["item"]["role"]) for e in given] == [
        ("conversation.item.create", "u1", "user"),
        ("conversation.item.create", f"item_{RID}", "assistant"),
        ("conversation.item.create", "u2", "user"),
    ]
    assert given[0]["item"]["content"] == [{"type": "input_text", "text": "hello there"}]
    assert given[1]["item"]["content"] == [{"type": "output_text", "text": "hi, how"}]
    echo = sc.upstream({"type": "conversation.item.created", "item": given[0]["item"]})
    echo += sc.upstream({"type": "conversation.item.done", "item": given[0]["item"]})
    assert not echo, "the client has these items already"
    new = sc.upstream(item_done("u3", "user", {"type": "input_audio", "transcript": "ok"}))
    assert types(new) == ["conversation.item.done"]


def test_the_conversation_moves_with_the_session_as_heard() -> None:
    sc = make()
    start_response(sc, chunks=10)  # "word " x 10
    sc.upstream(item_done(AID, "assistant", {"type": "output_audio", "transcript": "word " * 10}))
    sc.speak([0.9] * 10)  # cut early: only part of it was heard
    moved = make(bound=False)
    relay(moved).restore(sc.s.snapshot())
    fresh = {"type": "session.created", "session": {"id": "duplex-up-2"}, "resume_token": "t"}
    (given,) = upstream_events(moved.s.handle(UpstreamReattached(fresh, moved.now)))
    heard = given["item"]["content"][0]["text"]
    assert heard and len(heard) < len("word " * 10)


def test_audio_held_during_an_overlap_is_replayed_after_a_move() -> None:
    """Held audio was handled upstream but never sent: a move must not lose it."""
    sc = make()
    start_response(sc, chunks=10)  # upstream seqs 10..30
    sc.speak([0.9] * 3)  # speech over the answer: its audio is held, not yet cut
    held = sc.upstream(audio_delta(RID, seq=31))
    assert not client_events(held), "held while the overlap is undecided"
    snap = sc.s.snapshot()
    assert upstream_binding(snap) == (UP, "tok-1", 30)
    assert relay(sc).upstream_position() == (UP, 30), "not acked upstream either"
    moved = make(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    relay(moved).restore(snap, resumed, now=sc.now)
    again = moved.upstream(audio_delta(RID, seq=31))
    assert types(again) == ["response.output_audio.delta"], "replayed, and sent this time"


def test_a_response_whose_end_is_held_moves_as_still_open() -> None:
    sc = make()
    start_response(sc, chunks=10)
    sc.speak([0.9] * 3)  # hold
    held = sc.upstream(audio_delta(RID, seq=31))
    held += sc.upstream(
        {"type": "response.done", "response": {"id": RID, "status": "completed"}}
        | {"server_event_seq": 32}
    )
    assert not client_events(held), "the end is held behind the held audio"
    snap = sc.s.snapshot()
    assert upstream_binding(snap) == (UP, "tok-1", 30)
    assert snap["open_response"]["response_id"] == RID
    assert snap["playback_reports"]["playing"] is None
    ended = make(bound=False).s.restore(snap)
    (done,) = [e for e in client_events(ended) if e["type"] == "response.done"]
    assert done["response"]["status"] == "incomplete", "never silently, on a fresh upstream"
