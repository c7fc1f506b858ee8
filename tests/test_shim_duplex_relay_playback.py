"""barge_in_emulated by script: who reports the end of playback upstream: the proxy after its
own ack, never to an upstream that goes by generation (a fresh one included), the
client once it acks itself; a cut of an answer generated in full, and the answers to
the proxy's own acks."""

from __future__ import annotations

from shim.inputs import UpstreamLost, UpstreamReattached
from tests.duplex_relay_script import acks, cut_an_answer, make, play_response, start_response
from tests.shim_script import types, upstream_events


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
