"""barge_in_emulated by script: the upstream session: events relayed without its seq and acked
once checkpointed, a lost socket resumed, a resume refused or given up, a session
replaced, a journal overflow, a gap in its seqs, and an event the edge could not take."""

from __future__ import annotations

from shim.actions import AbortUpstream, ResumeUpstream, StandDown
from shim.inputs import UpstreamCheckpointed, UpstreamEvent, UpstreamLost, UpstreamReattached
from shim.snapshot import upstream_binding
from tests.duplex_relay_script import AID, RID, UP, make, relay, start_response
from tests.shim_script import client_events, types, upstream_events


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
