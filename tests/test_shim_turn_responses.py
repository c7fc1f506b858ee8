"""duplex_emulated: responses over a turn-based upstream, by script through ``handle``:
when one may be created or cancelled, where a cut falls, a lost upstream, a new turn over
a response still going, upstream errors and unknown events."""

from __future__ import annotations

from shim.actions import AbortUpstream
from shim.audio import b64encode
from shim.inputs import UpstreamCheckpointed, UpstreamLost, UpstreamReattached
from tests.shim_edge_scripts import TURN, errors, start_turn, the, turn_audio, turn_based
from tests.shim_script import client_events, types, upstream_events


def test_response_create_needs_a_committed_turn_and_no_response_in_progress() -> None:
    sc = turn_based()
    (err,) = errors(sc.client({"type": "response.create"}))
    assert err["code"] == "response_create_without_input"
    sc.client({"type": "session.update", "session": {"audio": {"input": {"turn_detection": None}}}})
    sc.audio(500, amplitude=1000)
    assert (
        types(sc.client({"type": "input_audio_buffer.commit"}))[0] == "input_audio_buffer.committed"
    )
    assert "response.created" in types(sc.client({"type": "response.create"}))
    sc.audio(500, amplitude=1000)
    sc.client({"type": "input_audio_buffer.commit"})
    (err,) = errors(sc.client({"type": "response.create"}))
    assert err["code"] == "conversation_already_has_active_response"


def test_an_empty_commit_is_refused() -> None:
    sc = turn_based()
    (err,) = errors(sc.client({"type": "input_audio_buffer.commit"}))
    assert err["code"] == "input_audio_buffer_commit_empty"


def test_cancel_names_the_active_response_or_is_refused() -> None:
    sc = turn_based()
    (err,) = errors(sc.client({"type": "response.cancel"}))
    assert err["code"] == "response_cancel_not_active"
    rid = start_turn(sc)
    (err,) = errors(sc.client({"type": "response.cancel", "response_id": "resp_other"}))
    assert err["code"] == "response_cancel_not_active"
    out = sc.client({"type": "response.cancel", "response_id": rid})
    done = the(client_events(out), "response.done")
    assert done["response"]["status_details"]["reason"] == "client_cancelled"
    assert any(isinstance(a, AbortUpstream) for a in out), "the only abort of this dialect"


def test_a_playback_ack_by_response_id_sets_where_a_cancel_cuts() -> None:
    sc = turn_based()
    rid = start_turn(sc, audio_ms=1000)
    sc.client({"type": "playback.ack", "response_id": "resp_other", "played_ms": 900})
    sc.client({"type": "playback.ack", "response_id": rid, "played_ms": 250})
    out = sc.client({"type": "response.cancel"})
    assert "conversation.item.truncated" not in types(out)  # GA: the client truncates
    item = the(client_events(out), "response.done")["response"]["output"][0]["id"]
    assert sc.s.ledger.get(item).truncated_ms == 250


def test_retrieving_an_assistant_item_gives_it_as_heard() -> None:
    sc = turn_based()
    rid = start_turn(sc, audio_ms=0)
    for i in range(10):
        sc.upstream({"type": "transcription.delta", "delta": f"w{i} "})
        turn_audio(sc)
    done = the(
        client_events(sc.client({"type": "response.cancel", "response_id": rid})),
        "response.done",
    )
    item_id = done["response"]["output"][0]["id"]
    got = the(
        client_events(sc.client({"type": "conversation.item.retrieve", "item_id": item_id})),
        "conversation.item.retrieved",
    )
    assert got["item"]["status"] == "incomplete"
    assert got["item"]["content"][0]["transcript"] == ""  # cut at once: nothing heard yet
    sc2 = turn_based()
    start_turn(sc2, audio_ms=0)
    sc2.upstream({"type": "transcription.delta", "delta": "all of it"})
    item_id = the(client_events(turn_audio(sc2)), "response.output_audio.delta")["item_id"]
    sc2.upstream({"type": "transcription.done", "text": "all of it, in full"})
    done = the(client_events(sc2.upstream({"type": "response.output_audio.done"})), "response.done")
    assert done["response"]["output"][0]["content"][0]["transcript"] == "all of it, in full"
    got = the(
        client_events(sc2.client({"type": "conversation.item.retrieve", "item_id": item_id})),
        "conversation.item.retrieved",
    )
    assert got["item"]["status"] == "completed"


def test_a_lost_upstream_ends_the_response_incomplete_and_redials() -> None:
    sc = turn_based()
    rid = start_turn(sc)
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    done = the(client_events(out), "response.done")
    assert done["response"]["id"] == rid
    assert done["response"]["status"] == "incomplete"
    assert done["response"]["status_details"]["error"]["code"] == "upstream_lost"
    (abort,) = [a for a in out if isinstance(a, AbortUpstream)]
    assert abort.after_loss and abort.redial
    assert upstream_events(out) == [{"type": "session.update", "model": "demo-up"}]
    assert not types(turn_audio(sc)), "the lost response's audio never comes back"


def test_a_new_turn_supersedes_a_response_still_going_and_takes_a_fresh_upstream() -> None:
    sc = turn_based()
    first = start_turn(sc, audio_ms=200)
    sc.tick(10_000)  # the 200 ms were played long ago; the upstream is still generating
    out = sc.speak(TURN)
    events = client_events(out)
    dones = [e for e in events if e["type"] == "response.done"]
    assert [d["response"]["id"] for d in dones] == [first]
    assert dones[0]["response"]["status_details"]["reason"] == "turn_detected"
    assert types(out).index("response.done") < types(out).index("response.created")
    assert sum(isinstance(a, AbortUpstream) for a in out) == 1


def test_with_interrupt_response_false_a_new_turn_waits_for_the_response_still_going() -> None:
    """GA: without interrupt_response the response goes on until complete; the turn
    is committed now and answered after it."""
    sc = turn_based()
    sc.client(
        {
            "type": "session.update",
            "session": {"audio": {"input": {"turn_detection": {"interrupt_response": False}}}},
        }
    )
    start_turn(sc, audio_ms=200)
    sc.tick(10_000)
    out = sc.speak(TURN)
    assert "input_audio_buffer.committed" in types(out)
    assert "response.done" not in types(out) and "response.created" not in types(out)
    assert not any(isinstance(a, AbortUpstream) for a in out)


def test_undecodable_upstream_audio_is_an_upstream_error_and_the_response_goes_on() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=0)
    out = sc.upstream({"type": "response.output_audio.delta", "audio": b64encode(b"\x01")})
    (err,) = errors(out)
    assert err["code"] == "upstream_error" and err["type"] == "server_error"
    assert types(turn_audio(sc)) == ["response.output_audio.delta"]


def test_an_upstream_error_fails_the_live_response() -> None:
    sc = turn_based()
    rid = start_turn(sc, audio_ms=300)
    out = sc.upstream({"type": "error", "code": "overloaded", "error": {"message": "busy"}})
    (err,) = errors(out)
    assert err["code"] == "overloaded" and "busy" in err["message"]
    done = the(client_events(out), "response.done")
    assert (done["response"]["id"], done["response"]["status"]) == (rid, "failed")
    out = sc.upstream({"type": "error", "error": "plain text"})
    assert [e["code"] for e in errors(out)] == ["upstream_error"]
    assert "response.done" not in types(out)


def test_unknown_upstream_events_pass_through_and_late_ones_are_dropped() -> None:
    sc = turn_based()
    assert types(sc.upstream({"type": "x.custom", "v": 1})) == ["x.custom"]
    assert not sc.upstream({"type": "session.created", "id": "sess-up"})
    assert not sc.upstream({"type": "transcription.delta", "delta": "late"})
    assert not sc.upstream({"type": "transcription.done", "text": "late"})
    assert not sc.upstream({"type": "response.output_audio.done"})
    assert not turn_audio(sc)


def test_the_turn_based_upstream_has_no_session_to_resume_or_checkpoint() -> None:
    sc = turn_based()
    assert sc.s.upstream_position() is None
    assert not sc.s.handle(UpstreamReattached({"type": "session.created"}, 0.0))
    assert not sc.s.handle(UpstreamCheckpointed("x", 3, 0.0))
