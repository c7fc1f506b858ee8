"""barge_in_emulated by script: relay, renumbering, and the proxy's own barge-in."""

from __future__ import annotations

import pybase64
import pytest

from shim.actions import AbortUpstream, ForwardUpstream, ResumeUpstream, StandDown
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import UpstreamCheckpointed, UpstreamEvent, UpstreamLost, UpstreamReattached
from shim.session import ShimSettings
from shim.snapshot import upstream_binding
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events, pcm_b64, types, upstream_events

RID = "resp-duplex-1-0-abcd1234"
AID = f"item_{RID}"


UP = "duplex-up-1"


def make(truncates: bool = False, bound: bool = True) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    caps = {"supports_barge_in": False, "supports_audio_truncate": truncates}
    session = BargeInRelaySession("sess_0123456789abcdef", "m", settings, caps)
    if bound:
        session.bind_upstream(
            {"type": "session.created", "session": {"id": UP}, "resume_token": "tok-1"}
        )
    return Script(session)


def relay(sc: Script) -> BargeInRelaySession:
    assert isinstance(sc.s, BargeInRelaySession)
    return sc.s


def start_response(sc: Script, chunks: int = 10, rate: int = 22050) -> list:  # type: ignore[type-arg]
    seq = iter(range(10, 1000))
    out = sc.upstream(
        {
            "type": "response.created",
            "response": {"id": RID, "status": "in_progress"},
            "server_event_seq": next(seq),
        }
    )
    for _ in range(chunks):
        out += sc.upstream(
            {
                "type": "response.output_audio.delta",
                "response_id": RID,
                "item_id": AID,
                "output_index": 0,
                "content_index": 0,
                "delta": pcm_b64(100, rate),
                "format": "pcm16",
                "sample_rate_hz": rate,
                "server_event_seq": next(seq),
            }
        )
        out += sc.upstream(
            {
                "type": "response.output_audio_transcript.delta",
                "response_id": RID,
                "item_id": AID,
                "delta": "word ",
                "server_event_seq": next(seq),
            }
        )
    return out


def test_upstream_events_are_relayed_without_the_upstreams_seq() -> None:
    sc = make()
    out = start_response(sc, chunks=2)
    events = client_events(out)
    assert events[0]["type"] == "response.created"
    assert all("server_event_seq" not in e for e in events), "the proxy numbers events itself"


def test_upstream_events_are_acked_only_once_checkpointed() -> None:
    sc = make()
    out = start_response(sc, chunks=4)  # upstream seqs 10..18
    assert not upstream_events(out), "nothing is acked before the store holds it"
    assert relay(sc).upstream_position() == (UP, 18)
    acked = sc.s.handle(UpstreamCheckpointed(UP, 14, sc.now))
    assert upstream_events(acked) == [{"type": "session.event_ack", "server_event_seq": 14}]
    assert not sc.s.handle(UpstreamCheckpointed(UP, 14, sc.now)), "acked once"
    assert not sc.s.handle(UpstreamCheckpointed("another-upstream", 18, sc.now))
    # Never beyond what was handled, whatever the checkpoint says.
    capped = sc.s.handle(UpstreamCheckpointed(UP, 99, sc.now))
    assert upstream_events(capped) == [{"type": "session.event_ack", "server_event_seq": 18}]


def test_a_lost_upstream_socket_resumes_the_upstream_session_and_goes_on() -> None:
    sc = make()
    start_response(sc, chunks=3)  # upstream seqs 10..16
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert out == [ResumeUpstream(UP, "tok-1", 16)], "no response ends: the upstream replays"
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    assert not sc.s.handle(UpstreamReattached(resumed, sc.now))
    snap = sc.s.snapshot()
    assert upstream_binding(snap) == (UP, "tok-2", 16)
    repeated = sc.upstream(
        {"type": "response.output_audio_transcript.delta", "response_id": RID, "delta": "x"}
        | {"server_event_seq": 16}
    )
    assert not repeated, "what was handled before the loss is not relayed twice"
    going_on = sc.upstream(
        {"type": "response.output_audio_transcript.delta", "response_id": RID, "delta": "more"}
        | {"item_id": AID, "server_event_seq": 17}
    )
    assert types(going_on) == ["response.output_audio_transcript.delta"]


def test_an_upstream_that_cannot_resume_ends_the_response_and_opens_a_fresh_session() -> None:
    sc = make()
    sc.client({"type": "session.update", "session": {"instructions": "be brief"}})
    start_response(sc, chunks=3)
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    (done,) = [e for e in client_events(out) if e["type"] == "response.done"]
    assert done["response"]["status"] == "incomplete"
    assert done["response"]["status_details"]["error"]["code"] == "upstream_lost"
    assert any(isinstance(a, AbortUpstream) and a.redial for a in out)
    (restore,) = upstream_events(out)
    assert restore["session"]["instructions"] == "be brief"
    fresh = {"type": "session.created", "session": {"id": "duplex-up-2"}, "resume_token": "t"}
    sc.s.handle(UpstreamReattached(fresh, sc.now))
    assert relay(sc).upstream_position() == ("duplex-up-2", 0), "its seqs count afresh"


def test_session_replaced_upstream_stands_the_session_down() -> None:
    sc = make()
    start_response(sc, chunks=2)
    out = sc.upstream({"type": "session.replaced", "session_id": UP})
    assert len(out) == 1 and isinstance(out[0], StandDown)
    after = sc.upstream(
        {"type": "response.output_audio_transcript.delta", "response_id": RID, "delta": "x"}
        | {"server_event_seq": 99}
    )
    assert not after, "the session carries on elsewhere"
    assert not sc.s.handle(UpstreamLost("socket closed", sc.now)), "no resume, no redial"


def test_an_upstream_journal_overflow_makes_it_unresumable_and_stays_upstream() -> None:
    sc = make()
    start_response(sc, chunks=1)
    out = sc.upstream({"type": "session.resync_required", "reason": "journal_overflow"})
    assert not out, "the client's journal is the proxy's: nothing to resync"
    assert upstream_binding(sc.s.snapshot()) is None
    lost = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert not any(isinstance(a, ResumeUpstream) for a in lost)
    assert "response.done" in types(lost)


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


def test_audio_is_resampled_to_the_clients_rate() -> None:
    sc = make()
    out = start_response(sc, chunks=10, rate=22050)
    deltas = [e for e in client_events(out) if e["type"] == "response.output_audio.delta"]
    n = sum(len(pybase64.b64decode(d["delta"])) // 2 for d in deltas)
    assert abs(n - 24000) < 2400
    assert all(d["sample_rate_hz"] == 24000 for d in deltas)


def test_ordinary_turns_are_left_to_the_upstream() -> None:
    sc = make()
    out = sc.speak([0.9] * 20 + [0.05] * 20)
    assert not [t for t in types(out) if t.startswith("input_audio_buffer.speech")]
    appends = [e for e in upstream_events(out) if e["type"] == "input_audio_buffer.append"]
    assert len(appends) == 40, "client audio is forwarded as it comes"


def test_barge_in_cancels_upstream_and_drops_the_rest_of_the_response() -> None:
    sc = make()
    start_response(sc, chunks=10)
    out = sc.speak([0.9] * 10)
    t = types(out)
    assert t[0] == "input_audio_buffer.speech_started"
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    truncated = next(e for e in client_events(out) if e["type"] == "conversation.item.truncated")
    assert truncated["item_id"] == AID
    up = [e["type"] for e in upstream_events(out) if e["type"] != "input_audio_buffer.append"]
    assert up == ["playback.ack", "output_audio_buffer.clear"]
    later = sc.upstream(
        {
            "type": "response.output_audio.delta",
            "response_id": RID,
            "item_id": AID,
            "delta": pcm_b64(100, 22050),
            "sample_rate_hz": 22050,
        }
    )
    later += sc.upstream({"type": "response.done", "response": {"id": RID, "status": "cancelled"}})
    assert not client_events(later), "the upstream's own end of a cut response is not repeated"


def test_session_update_goes_upstream_with_turn_detection() -> None:
    """A strict upstream detects turns only under server_vad: the client's choice reaches
    it, and the proxy's own VAD (for barge-ins) follows it too."""
    sc = make()
    out = sc.client(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "instructions": "be brief",
                "audio": {
                    "input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 300}}
                },
            },
        }
    )
    (forwarded,) = upstream_events(out)
    assert forwarded["session"]["instructions"] == "be brief"
    assert forwarded["session"]["audio"]["input"]["turn_detection"]["type"] == "server_vad"
    assert sc.s.config.turn.vad is not None and sc.s.config.turn.vad.silence_duration_ms == 300


def test_truncate_without_upstream_support_becomes_a_playback_ack() -> None:
    sc = make(truncates=False)
    start_response(sc, chunks=3)
    out = sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    assert types(out) == ["response.done"]
    out = sc.client(
        {
            "type": "conversation.item.truncate",
            "item_id": AID,
            "content_index": 0,
            "audio_end_ms": 120,
        }
    )
    assert "conversation.item.truncated" in types(out)
    (ack,) = upstream_events(out)
    assert ack["type"] == "playback.ack" and ack["played_ms"] == 120


@pytest.mark.parametrize("kind", ["vendor.custom", "other", "response.create"])
def test_unknown_client_events_pass_through_untouched(kind: str) -> None:
    sc = make()
    out = sc.client({"type": kind, "x": [1, 2]})
    assert len(out) == 1 and isinstance(out[0], ForwardUpstream)
    assert f'"{kind}"' in out[0].raw
    assert sc.client({"type": "playback.ack", "played_ms": 10})  # the session goes on


def audio_delta(rid: str, seq: int | None = None, rate: int = 22050) -> dict:  # type: ignore[type-arg]
    """100 ms of the response's audio from the upstream, journaled at ``seq`` if given."""
    ev = {
        "type": "response.output_audio.delta",
        "response_id": rid,
        "item_id": f"item_{rid}",
        "delta": pcm_b64(100, rate),
        "sample_rate_hz": rate,
    }
    return ev if seq is None else ev | {"server_event_seq": seq}


def play_response(sc: Script, rid: str, deltas: int, rate: int = 22050) -> list:  # type: ignore[type-arg]
    """A whole response of ``deltas`` x 100 ms of audio, generated at once."""
    out = sc.upstream({"type": "response.created", "response": {"id": rid}})
    for _ in range(deltas):
        out += sc.upstream(audio_delta(rid, rate=rate))
    out += sc.upstream({"type": "response.done", "response": {"id": rid, "status": "completed"}})
    return out


def cut_an_answer(sc: Script) -> list:  # type: ignore[type-arg]
    """An answer, speech over it that cuts it, then silence."""
    start_response(sc, chunks=10)
    out = sc.speak([0.9] * 10)
    sc.speak([0.05] * 20)
    return out


def acks(out: list) -> list[dict]:  # type: ignore[type-arg]
    return [e for e in upstream_events(out) if e["type"] == "playback.ack"]


def test_after_its_own_ack_the_proxy_reports_each_later_playback_end() -> None:
    """An upstream that has seen a playback.ack holds the turn until audio is acked as
    played: for a client that sends no acks, the proxy says when playback ended."""
    sc = make()
    assert acks(cut_an_answer(sc)), "the cut says what was heard"
    out = play_response(sc, "resp-2", deltas=5)  # 500 ms
    out += sc.tick(200)
    assert not acks(out), "still playing"
    (ack,) = acks(sc.tick(400))
    assert ack == {
        "type": "playback.ack",
        "played_ms": 500,
        "committed_ms": 500,
        "response_id": "resp-2",
        "item_id": "item_resp-2",
    }
    assert not acks(sc.tick(1000)), "once"


def test_no_playback_reports_to_an_upstream_that_goes_by_generation() -> None:
    sc = make()
    play_response(sc, "resp-1", deltas=3)
    assert not acks(sc.tick(2000)), "it never saw an ack: no need to start now"


def test_a_client_that_acks_itself_is_the_one_that_reports() -> None:
    sc = make()
    cut_an_answer(sc)  # the proxy acks what was heard: the upstream now goes by acks
    play_response(sc, "resp-2", deltas=2)
    forwarded = sc.client(
        {
            "type": "playback.ack",
            "played_ms": 100,
            "response_id": "resp-2",
            "item_id": "item_resp-2",
        }
    )
    assert acks(forwarded) and acks(forwarded)[0]["played_ms"] == 100
    assert not acks(sc.tick(2000)), "the client's acks are the truth"


def test_cutting_an_answer_generated_in_full_clears_its_playback_upstream() -> None:
    sc = make()
    cut_an_answer(sc)  # the proxy acks what was heard: the upstream now goes by acks
    play_response(sc, "resp-2", deltas=30)  # 3 s, all generated, playing
    out = sc.speak([0.9] * 10)
    # It already ended (response.done completed): the cut only truncates it.
    assert "response.done" not in types(out)
    assert "conversation.item.truncated" in types(out)
    up = [e for e in upstream_events(out) if e["type"] != "input_audio_buffer.append"]
    assert [e["type"] for e in up] == ["playback.ack", "output_audio_buffer.clear"]
    assert up[0]["played_ms"] < 3000 and up[1]["response_id"] == "resp-2"
    assert not acks(sc.tick(5000)), "its end was reported by the cut"


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


def test_a_gap_in_the_upstreams_seqs_gives_that_session_up_never_silently() -> None:
    sc = make()
    start_response(sc, chunks=2)  # upstream seqs 10..14
    out = sc.upstream(
        {"type": "response.output_audio_transcript.delta", "response_id": RID, "delta": "x"}
        | {"item_id": AID, "server_event_seq": 16}  # 15 never came
    )
    (done,) = [e for e in client_events(out) if e["type"] == "response.done"]
    assert done["response"]["status"] == "incomplete"
    assert any(isinstance(a, AbortUpstream) and a.redial for a in out), "a fresh session"
    assert not any(isinstance(a, ResumeUpstream) for a in out)


def test_an_event_the_edge_could_not_take_still_counts_in_the_upstreams_journal() -> None:
    sc = make()
    start_response(sc, chunks=2)  # upstream seqs 10..14
    # 15 was nested too deeply to stamp: the edge hands over its seq alone.
    skipped = UpstreamEvent({"server_event_seq": 15}, "", sc.now, skipped=True)
    assert sc.s.handle(skipped) == [], "nothing for the client, nothing to recover"
    out = sc.upstream(
        {"type": "response.output_audio_transcript.delta", "response_id": RID, "delta": "x"}
        | {"item_id": AID, "server_event_seq": 16}
    )
    assert [e["type"] for e in client_events(out)] == ["response.output_audio_transcript.delta"]
    assert not any(isinstance(a, (AbortUpstream, ResumeUpstream)) for a in out)
    assert relay(sc).upstream_position() == (UP, 16)
    assert sc.s.handle(skipped) == [], "replayed by a resume: a repeat, dropped"


def test_an_upstream_that_keeps_dropping_is_given_up_after_a_few_resumes() -> None:
    sc = make()
    start_response(sc, chunks=1)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok"}
    for _ in range(3):
        out = sc.s.handle(UpstreamLost("socket closed", sc.now))
        assert isinstance(out[0], ResumeUpstream)
        sc.s.handle(UpstreamReattached(resumed, sc.now))
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert not any(isinstance(a, ResumeUpstream) for a in out)
    assert any(isinstance(a, AbortUpstream) for a in out)


def test_answers_to_the_proxys_own_acks_are_not_the_clients() -> None:
    sc = make()
    start_response(sc, chunks=10)
    (ack,) = acks(sc.speak([0.9] * 10))
    answer = {
        "type": "playback.acknowledged",
        "event": {"item_id": ack["item_id"], "played_ms": ack["played_ms"]},
    }
    assert not sc.upstream(answer), "the client sent no ack"
    assert types(sc.upstream(answer)) == ["playback.acknowledged"], "one answer per ack"


def test_a_fresh_upstream_session_has_seen_no_ack() -> None:
    sc = make()
    cut_an_answer(sc)  # the proxy acks what was heard: the upstream now goes by acks
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    fresh = {"type": "session.created", "session": {"id": "duplex-up-2"}, "resume_token": "t"}
    sc.s.handle(UpstreamReattached(fresh, sc.now))
    play_response(sc, "resp-2", deltas=2)
    assert not acks(sc.tick(2000)), "it goes by generation until it sees an ack"


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


@pytest.mark.parametrize("truncates", [True, False])
def test_a_truncate_past_the_proxys_cut_goes_upstream_at_the_cut(truncates: bool) -> None:
    # A GA client stops playing on the proxy's speech_started and truncates where it
    # stopped, often past the cut the proxy made and told: the client is told that cut
    # again, and the upstream must hear the same point, not the client's larger one.
    sc = make(truncates=truncates)
    start_response(sc, chunks=20)
    sc.tick(400)
    sc.speak([0.9] * 10)
    item = sc.s.ledger.get(AID)
    assert item is not None and item.told_by == "proxy" and item.truncated_ms is not None
    cut = item.truncated_ms
    ev = {"type": "conversation.item.truncate", "item_id": AID, "content_index": 0}
    out = sc.client({**ev, "audio_end_ms": cut + 300})
    told = [e["audio_end_ms"] for e in client_events(out) if e["type"].endswith("truncated")]
    assert told == [cut]
    heard = [e.get("audio_end_ms", e.get("played_ms")) for e in upstream_events(out)]
    assert heard and all(ms == cut for ms in heard)
