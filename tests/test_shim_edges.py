"""Edge paths of both emulated sessions, by script through ``handle``: the error answers,
the less common upstream events, and the rules that only apply now and then."""

from __future__ import annotations

from typing import Any

import numpy as np
import pybase64
import pytest

from shim.actions import AbortUpstream, Action, SendClient, SendUpstream
from shim.audio import b64encode
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import Tick, UpstreamCheckpointed, UpstreamLost, UpstreamReattached
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events, pcm_b64, types, upstream_events

SID = "sess_0123456789abcdef"
TURN = [0.05] * 5 + [0.9] * 20 + [0.05] * 20  # a VAD turn: speech then 640 ms of silence

T_UNKNOWN = "item_truncate_invalid_item_id"  # GA: an unknown item, for a truncate


def turn_based(min_barge_in_ms: int = 200, **kw: Any) -> Script:
    settings = ShimSettings(
        vad=VadParams(), min_barge_in_ms=min_barge_in_ms, echo_suppression=False, **kw
    )
    return Script(TurnBasedSession(SID, "demo", "demo-up", settings))


class Relay(Script):
    """A relay script whose upstream numbers its events as its journal does."""

    seq = 0

    def up(self, event: dict[str, Any]) -> list[Action]:
        self.seq += 1
        return self.upstream({**event, "server_event_seq": self.seq})


def relay(truncates: bool = False, min_barge_in_ms: int = 200) -> Relay:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=min_barge_in_ms)
    caps = {"supports_barge_in": False, "supports_audio_truncate": truncates}
    sc = Relay(BargeInRelaySession(SID, "demo", settings, caps))
    created = {"type": "session.created", "session": {"id": "up-1"}, "resume_token": "tk"}
    sc.s.handle(UpstreamReattached(created, 0.0))
    return sc


def turn_audio(sc: Script, ms: int = 100, rate: int = 24000) -> list[Action]:
    return sc.upstream(
        {"type": "response.output_audio.delta", "audio": pcm_b64(ms, rate), "sample_rate_hz": rate}
    )


def start_turn(sc: Script, audio_ms: int = 1000) -> str:
    """A VAD turn and its response with ``audio_ms`` of assistant audio sent; its id."""
    out = sc.speak(TURN)
    (created,) = [e for e in client_events(out) if e["type"] == "response.created"]
    for _ in range(audio_ms // 100):
        turn_audio(sc)
    return str(created["response"]["id"])


def errors(actions: list[Action]) -> list[dict[str, Any]]:
    return [e["error"] for e in client_events(actions) if e["type"] == "error"]


def the(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (event,) = [e for e in events if e["type"] == kind]
    return event


# --- client events the session refuses, with a code -------------------------------------


@pytest.mark.parametrize("make", [turn_based, relay])
@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"type": "input_audio_buffer.append"}, "invalid_event"),
        ({"type": "input_audio_buffer.append", "audio": "!!"}, "invalid_audio"),
        ({"type": "input_audio_buffer.append", "audio": b64encode(b"\x00")}, "invalid_audio"),
        ({"type": "input_audio_buffer.append", "audio": ""}, "invalid_audio"),
        ({"type": "playback.ack", "played_ms": True}, "invalid_event"),
        ({"type": "playback.ack", "played_ms": "10"}, "invalid_event"),
        # A truncate: (a GA client's code, a native one's: vLLM-Omni reads the event,
        # taking any number, then looks the item up; shim/native_truncate.py).
        (
            {"type": "conversation.item.truncate", "audio_end_ms": 0},
            ("invalid_event", "missing_item_id"),
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": -1},
            ("invalid_value", "item_not_found"),
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": 1.5},
            ("invalid_event", "item_not_found"),
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": 0},
            (T_UNKNOWN, "item_not_found"),  # GA's code names the request
        ),
    ],
)
def test_bad_client_events_get_one_coded_error(
    make: Any, event: dict[str, Any], code: str | tuple[str, str]
) -> None:
    sc = make()
    if isinstance(code, tuple):
        code = code[sc.s.config.native]
    out = sc.client({**event, "event_id": "evt_7"})
    if make is relay and event["type"] != "conversation.item.truncate":
        # What the relay cannot read, vLLM-Omni refuses itself, in its own words.
        assert not errors(out)
        assert upstream_events(out) == [{**event, "event_id": "evt_7"}]
        return
    (err,) = errors(out)
    assert err["code"] == code
    assert err["event_id"] == "evt_7"
    assert not upstream_events(out), "nothing refused goes upstream"


def test_a_truncate_beyond_the_audio_sent_is_refused() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=500)
    item = the(client_events(turn_audio(sc)), "response.output_audio.delta")["item_id"]
    (err,) = errors(
        sc.client({"type": "conversation.item.truncate", "item_id": item, "audio_end_ms": 5000})
    )
    assert err["code"] == "invalid_value" and err["param"] == "audio_end_ms"


def test_an_unknown_item_is_not_found_in_duplex_emulated_and_asked_upstream_in_the_relay() -> None:
    (err,) = errors(turn_based().client({"type": "conversation.item.retrieve", "item_id": "x"}))
    assert err["code"] == "item_retrieve_invalid_item_id"
    ask = {"type": "conversation.item.retrieve", "item_id": "x"}
    assert relay().client(ask) == [SendUpstream(ask)]


class NotAnInput:
    now_ms = 0.0


def test_an_input_that_is_not_one_is_refused_loudly() -> None:
    try:
        out = turn_based().s.handle(NotAnInput())  # type: ignore[arg-type]
    except TypeError:
        return  # a programming error, raised
    assert [e["code"] for e in errors(out)] == ["internal_error"]  # or reported as one


# --- duplex_emulated: responses over a turn-based upstream ------------------------------


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


def test_overlap_held_transcript_is_released_in_order_when_it_was_a_backchannel() -> None:
    sc = turn_based(min_barge_in_ms=2000)
    start_turn(sc, audio_ms=1000)
    assert not types(sc.speak([0.9] * 4)), "undecided: speech_started only for a barge-in"
    held = sc.upstream({"type": "transcription.delta", "delta": "held words"})
    held += turn_audio(sc)
    assert not types(held)
    out = sc.speak([0.05] * 20)
    t = types(out)
    assert t.index("response.output_audio_transcript.delta") < t.index(
        "response.output_audio.delta"
    )


def test_overlap_still_undecided_when_the_assistant_stops_becomes_the_next_turn() -> None:
    sc = turn_based(min_barge_in_ms=5000)
    start_turn(sc, audio_ms=300)
    done = sc.upstream({"type": "response.output_audio.done"})
    assert "response.done" in types(done)
    assert not types(sc.speak([0.9] * 4)), "undecided: speech_started only for a barge-in"
    # The 300 ms played out long ago: the speech is the user's own turn.
    assert types(sc.tick(5000)) == ["input_audio_buffer.speech_started"]
    out = sc.speak([0.05] * 20)
    assert types(out)[:2] == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]


def test_too_much_held_audio_is_released_on_a_tick() -> None:
    sc = turn_based(min_barge_in_ms=5000, max_hold_ms=300)
    start_turn(sc, audio_ms=1000)
    sc.speak([0.9] * 4)
    held: list[Action] = []
    for _ in range(5):
        held += turn_audio(sc)
    assert not types(held)
    out = sc.tick(10)
    assert types(out).count("response.output_audio.delta") == 5


def test_pcm_f32_input_is_read_and_nan_in_it_refused() -> None:
    sc = turn_based()
    sc.client(
        {
            "type": "session.update",
            "session": {"audio": {"input": {"format": {"type": "pcm_f32le", "rate": 16000}}}},
        }
    )
    samples = (np.sin(np.arange(16000) / 10) * 0.5).astype("<f4")
    out = sc.client({"type": "input_audio_buffer.append", "audio": b64encode(samples.tobytes())})
    assert not errors(out)
    nan = np.array([np.nan] * 4, dtype="<f4")
    (err,) = errors(
        sc.client({"type": "input_audio_buffer.append", "audio": b64encode(nan.tobytes())})
    )
    assert err["code"] == "invalid_audio"


def test_long_input_without_a_turn_keeps_memory_bounded_and_vad_turns_still_work() -> None:
    sc = turn_based()
    for _ in range(8):
        sc.audio(1000)  # 8 s of silence with no turn: only the recent part is kept
    sc.vad_end = 8 * 16000  # the VAD heard those 8 s too (as silence)
    out = sc.speak(TURN)
    up = upstream_events(out)
    sent = b"".join(
        pybase64.b64decode(e["audio"]) for e in up if e["type"] == "input_audio_buffer.append"
    )
    assert 0 < len(sent) // 2 <= 16 * 1500, "the turn from its padded start, not all 8 s"


# --- barge_in_emulated: the relay ----------------------------------------------------------

RID = "resp-up-1"
AID = f"item_{RID}"


def relay_respond(sc: Relay, chunks: int = 10, rate: int = 24000, rid: str = RID) -> list[Action]:
    out = sc.up({"type": "response.created", "response": {"id": rid}})
    for _ in range(chunks):
        out += sc.up(
            {
                "type": "response.output_audio.delta",
                "response_id": rid,
                "item_id": f"item_{rid}",
                "delta": pcm_b64(100, rate),
                "sample_rate_hz": rate,
            }
        )
    return out


def relay_done(sc: Relay, rid: str = RID) -> list[Action]:
    return sc.up({"type": "response.done", "response": {"id": rid}})


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


def test_an_unbound_relay_has_no_upstream_position() -> None:
    settings = ShimSettings()
    session = BargeInRelaySession(SID, "demo", settings, None)
    assert session.upstream_position() is None
    assert session.snapshot()["upstream"] is None


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


def cut(sc: Relay) -> list[Action]:
    """User speech over the playing response, long enough to cut it."""
    return sc.speak([0.9] * 12)


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


def test_finished_items_are_remembered_and_given_to_a_fresh_upstream_session() -> None:
    sc = relay()
    items = [
        {"id": "u1", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {
            "id": "a1",
            "role": "assistant",
            "content": [{"type": "output_audio", "transcript": "hi"}],
        },
        {"id": "x1", "role": "tool", "content": [{"text": "ignored"}]},
        {"id": "e1", "role": "user", "content": [{"type": "input_audio"}, "odd"]},
    ]
    for item in items:
        sc.up({"type": "conversation.item.done", "item": item})
    sc.s.handle(UpstreamLost("gone", sc.now, resume=False))
    fresh = {"type": "session.created", "session": {"id": "up-2"}}
    out = sc.s.handle(UpstreamReattached(fresh, sc.now))
    given = [e["item"] for e in upstream_events(out)]
    assert [(i["id"], i["role"], i["content"][0]["text"]) for i in given] == [
        ("u1", "user", "hello"),
        ("a1", "assistant", "hi"),
    ]
    sc.seq = 0  # the fresh upstream session numbers its events afresh
    # Their echoes from the fresh upstream are the talk so far: the client has them.
    assert not sc.up({"type": "conversation.item.added", "item": given[0]})
    assert not sc.up({"type": "conversation.item.done", "item": given[0]})
    again = sc.up({"type": "conversation.item.added", "item": given[0]})
    assert types(again) == ["conversation.item.added"]


def test_upstream_session_events_in_the_stream_rebind_and_unknown_audio_passes() -> None:
    sc = relay()
    sc.upstream({"type": "session.created", "session": {"id": "up-9"}, "resume_token": "t9"})
    assert sc.s.upstream_position() == ("up-9", 0)
    odd = {"type": "response.output_audio.delta", "delta": 5}
    assert client_events(sc.upstream(odd)) == [odd], "not audio it can read: relayed as is"
    loose = {"type": "response.output_audio.delta", "delta": pcm_b64(100, 24000)}
    assert client_events(sc.upstream(loose)) == [loose], "no response open: relayed as is"


def test_bad_upstream_audio_in_the_relay_is_an_upstream_error() -> None:
    sc = relay()
    relay_respond(sc, chunks=1)
    (err,) = errors(
        sc.up({"type": "response.output_audio.delta", "response_id": RID, "delta": "!!"})
    )
    assert err["code"] == "upstream_error"


def test_relay_audio_at_the_clients_rate_passes_untouched_and_other_rates_are_resampled() -> None:
    sc = relay()
    out = relay_respond(sc, chunks=1, rate=24000)
    delta = the(client_events(out), "response.output_audio.delta")
    assert delta["sample_rate_hz"] == 24000
    sc2 = relay()
    out = relay_respond(sc2, chunks=2, rate=16000)
    deltas = [e for e in client_events(out) if e["type"] == "response.output_audio.delta"]
    assert deltas and all(d["sample_rate_hz"] == 24000 for d in deltas)


def test_upstream_speech_events_are_relayed_except_right_after_a_cut() -> None:
    sc = relay(min_barge_in_ms=200)
    relay_respond(sc, chunks=10)
    assert "response.done" in types(cut(sc))
    started = {"type": "input_audio_buffer.speech_started", "item_id": "u"}
    assert not sc.up(started), "the proxy already said so"
    assert types(sc.up({"type": "input_audio_buffer.committed", "item_id": "u"})) == [
        "input_audio_buffer.committed"
    ]
    # The upstream's next speech is relayed (a stop only after its start was).
    started = {"type": "input_audio_buffer.speech_started", "item_id": "u2"}
    assert types(sc.up(started)) == ["input_audio_buffer.speech_started"]
    stopped = {"type": "input_audio_buffer.speech_stopped", "item_id": "u2"}
    assert types(sc.up(stopped)) == ["input_audio_buffer.speech_stopped"]


def test_a_relay_tick_with_nothing_to_report_sends_nothing() -> None:
    sc = relay()
    assert not sc.s.handle(Tick(1000.0))
    relay_respond(sc, chunks=2)
    assert not sc.s.handle(Tick(sc.now + 10_000))


def test_a_restored_relay_with_its_upstream_resumed_reports_a_finished_playback() -> None:
    sc = relay(min_barge_in_ms=200)
    relay_respond(sc, chunks=10)
    cut(sc)  # the proxy now reports playback itself
    sc.speak([0.05] * 20)  # and stops: the next answer is not spoken over
    rid2 = "resp-up-2"
    relay_respond(sc, chunks=3, rid=rid2)
    relay_done(sc, rid2)
    snap = sc.s.snapshot()
    assert snap["playback_reports"]["playing"]["response_id"] == rid2
    moved = BargeInRelaySession(SID, "demo", ShimSettings(), {"supports_barge_in": False})
    resumed = {"type": "session.resumed", "session_id": "up-1", "resume_token": "tk"}
    assert not moved.restore(snap, resumed=resumed, now=sc.now)
    (ack,) = [a.event for a in moved.handle(Tick(sc.now + 1)) if isinstance(a, SendUpstream)]
    assert ack["type"] == "playback.ack" and ack["played_ms"] == 300


def test_send_client_events_from_the_relay_never_carry_the_upstream_seq() -> None:
    sc = relay()
    out = relay_respond(sc, chunks=2)
    assert all("server_event_seq" not in a.event for a in out if isinstance(a, SendClient))
