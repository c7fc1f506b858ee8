"""barge_in_emulated (the relay): what the client sends, by script through ``handle``: a
session.update forwarded whole, truncates (upstream as a truncate or a heard ack, or
refused), a cut's stop of playback, and the playback reports the proxy takes over."""

from __future__ import annotations

import pytest

from tests.shim_edge_scripts import AID, cut, errors, relay, relay_done, relay_respond, the
from tests.shim_script import client_events, pcm_b64, types, upstream_events


def test_the_relay_forwards_a_session_update_whole_in_either_shape() -> None:
    """Turn detection included: a strict upstream detects turns only under server_vad."""
    sc = relay()
    flat = {
        "type": "session.update",
        "session": {"turn_detection": {"type": "server_vad"}, "instructions": "x"},
    }
    (up,) = upstream_events(sc.client(flat))
    assert up == flat
    bare = {"type": "session.update", "instructions": "y", "turn_detection": None}
    (up,) = upstream_events(sc.client(bare))
    assert up == bare
    (err,) = errors(sc.client({"type": "session.update", "session": 3}))
    assert err["code"] == "invalid_value"


@pytest.mark.parametrize("truncates", [False, True])
def test_a_client_truncate_goes_upstream_as_truncate_or_as_a_heard_ack(truncates: bool) -> None:
    sc = relay(truncates=truncates)
    relay_respond(sc, chunks=5)
    relay_done(sc)
    sc.tick(10_000)
    ev = {"type": "conversation.item.truncate", "item_id": AID, "audio_end_ms": 200}
    out = sc.client(ev)
    assert the(client_events(out), "conversation.item.truncated")["audio_end_ms"] == 200
    (up,) = upstream_events(out)
    if truncates:
        assert up == ev
    else:
        assert up["type"] == "playback.ack" and up["played_ms"] == 200


def test_the_relay_answers_an_unknown_item_truncate_with_an_error_only() -> None:
    sc = relay()
    ev = {"type": "conversation.item.truncate", "item_id": "nope", "audio_end_ms": 0}
    (err,) = errors(sc.client(ev))
    assert err["code"] == "item_not_found"  # a native client's (vLLM-Omni's code)


def test_the_relay_refuses_a_truncate_of_a_user_item_as_not_the_assistants() -> None:
    """A native client's truncate of a user item the upstream has: vLLM-Omni's
    ``bad_event``; once the upstream deleted it, an item it does not have."""
    sc = relay()
    sc.up(
        {"type": "conversation.item.added", "item": {"id": "u1", "type": "message", "role": "user"}}
    )
    ev = {"type": "conversation.item.truncate", "item_id": "u1", "audio_end_ms": 0}
    (err,) = errors(sc.client(ev))
    assert (err["code"], err["message"]) == (
        "bad_event",
        "conversation.item.truncate only supports assistant message items",
    )
    sc.up({"type": "conversation.item.deleted", "item_id": "u1"})
    (err,) = errors(sc.client(ev))
    assert err["code"] == "item_not_found"


def test_a_cut_of_a_response_generated_in_full_stops_its_playback_upstream() -> None:
    sc = relay(min_barge_in_ms=200)
    relay_respond(sc, chunks=30)  # 3 s of audio
    sc.client({"type": "playback.ack", "item_id": AID, "played_ms": 100})  # the client acks
    relay_done(sc)
    out = cut(sc)
    up = [e["type"] for e in upstream_events(out)]
    assert "output_audio_buffer.clear" in up and "response.cancel" not in up
    # It already ended (response.done completed): the cut only truncates it.
    assert "response.done" not in types(out)
    assert "conversation.item.truncated" in types(out)


def test_the_proxy_reports_the_end_of_playback_once_it_has_acked_anything() -> None:
    sc = relay(min_barge_in_ms=200)
    relay_respond(sc, chunks=10)
    cut(sc)  # the proxy acks what was heard: from now on it reports playback itself
    sc.speak([0.05] * 20)  # and stops: the next answer is not spoken over
    rid2 = "resp-up-2"
    relay_respond(sc, chunks=0, rid=rid2)
    sc.up(
        {
            "type": "response.output_audio.delta",
            "response_id": rid2,
            "item_id": f"item_{rid2}",
            "delta": pcm_b64(250, 24000),
            "sample_rate_hz": 24000,
        }
    )
    relay_done(sc, rid2)
    assert not upstream_events(sc.tick(100)), "still playing"
    (ack,) = upstream_events(sc.tick(5000))
    assert ack == {
        "type": "playback.ack",
        "played_ms": 250,
        "committed_ms": 250,
        "response_id": rid2,
        "item_id": f"item_{rid2}",
    }
    answer = {"type": "playback.acknowledged", "item_id": f"item_{rid2}", "played_ms": 250}
    assert not sc.up(answer), "the answer to its own ack"
    assert types(sc.up(answer)) == ["playback.acknowledged"], "a second one is the client's"
    assert not upstream_events(sc.tick(5000)), "reported once"
