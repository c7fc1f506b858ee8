"""duplex_emulated by script: VAD turns, translation, barge-in, backchannels, push-to-talk."""

from __future__ import annotations

import pybase64
import pytest

from shim.actions import AbortUpstream, ReportFault, SendClient, SendUpstream
from shim.dialects.turn_based import TurnBasedSession
from shim.fault import fault_actions
from shim.inputs import ClientEvent, UpstreamLost, VadWindow
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, analyzed, client_events, pcm_b64, types, upstream_events

SPEECH = [0.9] * 20  # 640 ms of speech
SILENCE = [0.05] * 20  # 640 ms: longer than silence_duration_ms (500)


def make(min_barge_in_ms: int = 200, echo: bool = False, decision_ms: int = 500) -> Script:
    settings = ShimSettings(
        vad=VadParams(),
        min_barge_in_ms=min_barge_in_ms,
        echo_suppression=echo,
        barge_in_decision_ms=decision_ms,
    )
    return Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))


def run_turn(sc: Script) -> list:  # type: ignore[type-arg]
    return sc.speak([0.05] * 5 + SPEECH + SILENCE)


def respond(sc: Script, chunks: int = 10, chunk_ms: int = 100) -> list:  # type: ignore[type-arg]
    out = []
    for i in range(chunks):
        out += sc.upstream({"type": "transcription.delta", "delta": f"w{i} "})
        out += sc.upstream(
            {
                "type": "response.output_audio.delta",
                "audio": pcm_b64(chunk_ms, 24000),
                "format": "pcm16",
                "sample_rate_hz": 24000,
            }
        )
    return out


def test_a_vad_turn_is_announced_committed_and_sent_upstream_in_its_dialect() -> None:
    sc = make()
    out = run_turn(sc)
    t = types(out)
    assert t[:2] == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"]
    assert t[2:5] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert t[5:] == [
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added",
    ]
    started = client_events(out)[0]
    # onset at 160 ms (5 quiet windows), minus 300 ms prefix padding, clamped at 0
    assert started["audio_start_ms"] == 0
    assert client_events(out)[1]["audio_end_ms"] == 160 + 20 * 32
    up = upstream_events(out)
    assert up[0] == {"type": "input_audio_buffer.commit", "final": False}
    assert up[-1] == {"type": "input_audio_buffer.commit", "final": True}
    sent = b"".join(
        pybase64.b64decode(e["audio"]) for e in up if e["type"] == "input_audio_buffer.append"
    )
    # 16 kHz PCM16 from the padded start (0) to the end of speech (800 ms)
    assert abs(len(sent) // 2 - 16 * 800) <= 16 * 40
    assert analyzed(out), "every append is analysed by the VAD"


def test_upstream_output_becomes_ga_events_with_ids_and_a_completed_response() -> None:
    sc = make()
    run_turn(sc)
    out = respond(sc, chunks=3)
    deltas = [e for e in client_events(out) if e["type"] == "response.output_audio.delta"]
    assert deltas and all({"response_id", "item_id", "delta"} <= set(d) for d in deltas)
    assert "audio" not in deltas[0]
    texts = [
        e["delta"]
        for e in client_events(out)
        if e["type"] == "response.output_audio_transcript.delta"
    ]
    assert texts == ["w0 ", "w1 ", "w2 "]
    out = sc.upstream({"type": "transcription.done", "text": "w0 w1 w2"})
    out += sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    done = client_events(out)[-1]
    assert done["type"] == "response.done"
    assert done["response"]["status"] == "completed"
    assert done["response"]["output"][0]["content"][0]["transcript"] == "w0 w1 w2"


def test_output_is_resampled_to_the_clients_declared_rate() -> None:
    sc = make()
    sc.client(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}},
            },
        }
    )
    run_turn(sc)
    out = respond(sc, chunks=5, chunk_ms=200)
    n = sum(
        len(pybase64.b64decode(e["delta"])) // 2
        for e in client_events(out)
        if e["type"] == "response.output_audio.delta"
    )
    assert abs(n - 16000) < 1600  # ~1 s of audio at 16 kHz (minus resampler latency)


def test_barge_in_cuts_cancels_truncates_and_redials_the_upstream() -> None:
    sc = make(min_barge_in_ms=200)
    run_turn(sc)
    respond(sc, chunks=10)  # 1 s of assistant audio sent at t=now
    out = sc.speak([0.9] * 12)
    t = types(out)
    assert t[0] == "input_audio_buffer.speech_started"
    assert "response.done" in t
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
    truncated = next(e for e in client_events(out) if e["type"] == "conversation.item.truncated")
    assert isinstance(truncated["audio_end_ms"], int)
    assert 0 < truncated["audio_end_ms"] <= 1000
    aborts = [a for a in out if isinstance(a, AbortUpstream)]
    assert len(aborts) == 1 and aborts[0].redial
    idx = out.index(aborts[0])
    assert isinstance(out[idx + 1], SendUpstream) and out[idx + 1].event["type"] == "session.update"
    # Later deltas of the cancelled response never reach the client.
    assert not types(respond(sc, chunks=2))


def test_a_backchannel_holds_then_releases_the_audio_without_cancelling() -> None:
    sc = make(min_barge_in_ms=400)
    run_turn(sc)
    respond(sc, chunks=5)
    out = sc.speak([0.9] * 8)  # 256 ms "uh-huh": over by the decision
    assert not types(out), "a GA client hears nothing of an undecided overlap"
    held = respond(sc, chunks=3)
    assert not types(held), "assistant audio is held while the overlap is undecided"
    out = sc.speak(SILENCE + [0.05] * 4)  # held through a pause the voice may end (700 ms)
    t = types(out)
    assert "input_audio_buffer.speech_started" not in t
    assert "input_audio_buffer.speech_stopped" not in t, "no end for a start never told"
    assert t.count("response.output_audio.delta") == 3, "held audio is released, none lost"
    assert "response.done" not in t


def test_push_to_talk_commits_on_request_and_responds_on_response_create() -> None:
    sc = make()
    sc.client(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
        }
    )
    out = sc.audio(500, amplitude=500)
    assert not analyzed(out), "no VAD when the client commits turns itself"
    out = sc.client({"type": "input_audio_buffer.commit"})
    assert types(out) == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert not upstream_events(out)
    out = sc.client({"type": "response.create"})
    assert types(out)[0] == "response.created"
    up = upstream_events(out)
    assert up[-1] == {"type": "input_audio_buffer.commit", "final": True}
    again = sc.client({"type": "response.create", "event_id": "e1"})
    assert client_events(again)[0]["error"]["code"] in (
        "response_create_without_input",
        "conversation_already_has_active_response",
    )


def test_client_cancel_ends_the_response_as_client_cancelled() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    out = sc.client({"type": "response.cancel"})
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status_details"]["reason"] == "client_cancelled"
    assert any(isinstance(a, AbortUpstream) for a in out)
    again = sc.client({"type": "response.cancel"})
    assert client_events(again)[0]["error"]["code"] == "response_cancel_not_active"


def test_losing_the_upstream_mid_response_ends_it_incomplete_never_silently() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    out = sc.s.handle(UpstreamLost("gone", sc.now))
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status"] == "incomplete"
    assert any(isinstance(a, AbortUpstream) and a.redial for a in out)


@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"type": "input_audio_buffer.append", "audio": "not base64!"}, "invalid_audio"),
        (
            {"type": "input_audio_buffer.append", "audio": "AAEC"},
            "invalid_audio",
        ),  # 3 bytes: not whole samples
        ({"type": "input_audio_buffer.append", "audio": 5}, "invalid_event"),
        ({"type": "input_audio_buffer.append", "audio": ""}, "invalid_audio"),
        (
            {
                "type": "conversation.item.truncate",
                "item_id": "nope",
                "content_index": 0,
                "audio_end_ms": 5,
            },
            "item_truncate_invalid_item_id",
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "x", "audio_end_ms": -1},
            "invalid_value",
        ),
        (
            {
                "type": "session.update",
                "session": {"audio": {"input": {"format": {"type": "audio/opus"}}}},
            },
            "unsupported_audio_format",
        ),
        (
            {
                "type": "session.update",
                "session": {
                    "audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 7}}}
                },
            },
            "invalid_value",
        ),
        ({"type": "playback.ack", "played_ms": "soon"}, "invalid_event"),
        ({"type": "input_audio_buffer.commit"}, "input_audio_buffer_commit_empty"),
    ],
)
def test_bad_input_gets_an_error_with_a_code_and_the_session_goes_on(
    event: dict, code: str
) -> None:  # type: ignore[type-arg]
    sc = make()
    event = {**event, "event_id": "evt_1"}
    out = sc.client(event)
    err = client_events(out)[0]
    assert err["type"] == "error"
    assert err["error"]["code"] == code
    assert err["error"]["event_id"] == "evt_1"
    assert types(run_turn(sc))[0] == "input_audio_buffer.speech_started"


def test_truncate_beyond_the_audio_sent_is_refused() -> None:
    sc = make()
    run_turn(sc)
    out = respond(sc, chunks=2)
    item_id = client_events(out)[0]["item_id"]
    err = client_events(
        sc.client(
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": 5000,
            }
        )
    )
    assert err[0]["error"]["code"] == "invalid_value"
    ok = client_events(
        sc.client(
            {
                "type": "conversation.item.truncate",
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": 50,
            }
        )
    )
    assert any(e["type"] == "conversation.item.truncated" and e["audio_end_ms"] == 50 for e in ok)


@pytest.mark.parametrize("kind", ["other", "conversation.item.create", "input_audio_buffer_append"])
def test_an_event_the_turn_based_upstream_cannot_carry_is_refused_and_the_session_goes_on(
    kind: str,
) -> None:
    sc = make()
    out = sc.client({"type": kind, "event_id": "evt_x"})
    assert [type(a) for a in out] == [SendClient]
    err = client_events(out)[0]
    assert err["error"]["code"] == "unsupported_event"
    assert err["error"]["event_id"] == "evt_x"
    assert kind in err["error"]["message"]
    assert types(run_turn(sc))[0] == "input_audio_buffer.speech_started"


def test_an_unexpected_failure_is_reported_and_the_session_goes_on() -> None:
    sc = make()
    run_turn(sc)
    # A VAD window that goes back in time is an edge bug: the gate refuses it.
    out = sc.s.handle(VadWindow(0.9, 512, sc.now))
    err = client_events(out)[0]
    assert err["error"]["code"] == "internal_error"
    assert "VadWindow" in err["error"]["message"]
    faults = [a for a in out if isinstance(a, ReportFault)]
    assert len(faults) == 1 and faults[0].input_kind == "VadWindow"
    assert "ValueError" in faults[0].error and "Traceback" in faults[0].trace
    assert "input_audio_buffer.speech_started" in types(run_turn(sc))


def test_a_failure_on_a_client_event_names_the_event_and_answers_its_id() -> None:
    event = {"type": "conversation.item.create", "event_id": "evt_7"}
    out = fault_actions(ClientEvent(event, "{}", 0.0), KeyError("item"))
    err = client_events(out)[0]["error"]
    assert err["code"] == "internal_error" and err["type"] == "server_error"
    assert "conversation.item.create" in err["message"] and err["event_id"] == "evt_7"
    (fault,) = [a for a in out if isinstance(a, ReportFault)]
    assert (fault.input_kind, fault.event_type) == ("ClientEvent", "conversation.item.create")
    assert fault.error == "KeyError('item')"


def test_audio_held_too_long_is_released_without_a_decision() -> None:
    sc = make(min_barge_in_ms=60_000, decision_ms=3000)  # the overlap never cuts
    run_turn(sc)
    respond(sc, chunks=5)
    assert not types(sc.speak([0.9] * 8))
    assert not types(respond(sc, chunks=31)), "3.1 s held: more than max_hold_ms"
    released = types(sc.tick(32))
    assert released.count("response.output_audio.delta") == 31
    assert "response.done" not in released and "input_audio_buffer.speech_stopped" not in released
    assert types(respond(sc, chunks=1)) == [
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
    ], "output flows again"


def test_clearing_the_input_during_an_overlap_ends_it_and_output_flows() -> None:
    sc = make(min_barge_in_ms=60_000, decision_ms=3000)
    run_turn(sc)
    respond(sc, chunks=5)
    assert not types(sc.speak([0.9] * 8))
    held = respond(sc, chunks=2)
    assert not types(held)
    cleared = types(sc.client({"type": "input_audio_buffer.clear"}))
    assert cleared[-1] == "input_audio_buffer.cleared"
    assert cleared.count("response.output_audio.delta") == 2, "what was held goes on"
    assert "response.output_audio.delta" in types(respond(sc, chunks=1))


def test_an_upstream_error_mid_response_fails_the_response_with_its_code() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    out = sc.upstream({"type": "error", "error": {"message": "boom"}, "code": "model_error"})
    events = client_events(out)
    assert events[0]["error"]["code"] == "model_error" and "boom" in events[0]["error"]["message"]
    (done,) = [e for e in events if e["type"] == "response.done"]
    assert done["response"]["status"] == "failed"
    assert done["response"]["status_details"]["error"]["code"] == "model_error"  # GA: the error


# ---------------------------------------------------------------- native clients
# vLLM-Omni's DuplexClient opens like this (docs/protocol.md, "Native clients").
NATIVE_OPEN = {
    "type": "session.update",
    "session": {
        "model": "demo",
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "sample_rate_hz": 16000,
        "audio": {"input": {"sample_rate_hz": 16000}, "output": {"sample_rate_hz": 24000}},
        "turn_detection": None,
        "extra_body": {"auto_response": True},
    },
}


def native_append(ms: int, rate: int = 16000) -> dict:  # type: ignore[type-arg]
    return {
        "type": "input_audio_buffer.append",
        "audio": pcm_b64(ms, rate),
        "format": "pcm16",
        "sample_rate_hz": rate,
    }


def native() -> Script:
    sc = make()
    assert types(sc.client(NATIVE_OPEN)) == ["session.updated"]
    return sc


def test_a_native_commit_is_answered_under_auto_response() -> None:
    sc = native()
    sc.client(native_append(800))
    out = sc.client({"type": "input_audio_buffer.commit", "final": True})
    t = types(out)
    assert t[:3] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert "response.created" in t
    sent = upstream_events(out)
    assert sent[-1] == {"type": "input_audio_buffer.commit", "final": True}
    audio = b"".join(pybase64.b64decode(e["audio"]) for e in sent if "audio" in e)
    assert len(audio) // 2 == pytest.approx(16000 * 0.8, abs=160), "800 ms at 16 kHz"


@pytest.mark.parametrize(
    ("auto", "asked", "answered"), [(True, False, True), (False, True, True), (False, False, False)]
)
def test_a_commit_says_itself_whether_it_wants_an_answer(
    auto: bool, asked: bool, answered: bool
) -> None:
    sc = make()
    sc.client(
        {
            **NATIVE_OPEN,
            "session": {**NATIVE_OPEN["session"], "extra_body": {"auto_response": auto}},
        }
    )
    sc.client(native_append(500))
    out = sc.client({"type": "input_audio_buffer.commit", "final": True, "response_create": asked})
    assert ("response.created" in types(out)) is answered


def test_without_auto_response_a_commit_waits_for_response_create() -> None:
    sc = make()
    sc.client({"type": "session.update", "session": {"turn_detection": None}})
    sc.client(native_append(500))
    assert "response.created" not in types(sc.client({"type": "input_audio_buffer.commit"}))
    assert types(sc.client({"type": "response.create"}))[0] == "response.created"


def test_a_native_commit_over_an_answer_in_progress_is_answered_after_it() -> None:
    sc = native()
    sc.client(native_append(500))
    sc.client({"type": "input_audio_buffer.commit", "final": True})
    respond(sc, chunks=2)
    sc.client(native_append(500))
    out = sc.client({"type": "input_audio_buffer.commit", "final": True})
    t = types(out)
    assert "input_audio_buffer.committed" in t
    assert "response.done" not in t and "response.created" not in t, "the answer goes on"
    assert not any(isinstance(a, AbortUpstream) for a in out)
    done = sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    t = types(done)
    assert t.index("response.done") < t.index("response.created"), "then the next answer"
    first = next(e for e in client_events(done) if e["type"] == "response.done")
    assert first["response"]["status"] == "completed"


def test_an_append_is_read_at_its_own_sample_rate() -> None:
    sc = make()  # the session says 24 kHz (the GA default); the appends say otherwise
    sc.client({"type": "session.update", "session": {"turn_detection": None}})
    sc.client(native_append(500, rate=16000))
    sc.client(native_append(500, rate=8000))
    sc.client(native_append(500, rate=8000))
    # 1.5 s on the 16 kHz timeline, less what the 8 kHz resampler still holds.
    assert sc.s.history.end_ms == pytest.approx(1500, abs=80)
    bad = sc.client({**native_append(20), "sample_rate_hz": 12.5})
    assert client_events(bad)[0]["error"]["code"] == "invalid_value"
    bad = sc.client({**native_append(20), "format": "pcmu"})
    assert client_events(bad)[0]["error"]["code"] == "unsupported_audio_format"


def test_auto_response_moves_with_the_session() -> None:
    sc = native()
    moved = make()
    moved.s.restore(sc.s.snapshot())
    moved.client({"type": "session.update", "session": {"turn_detection": None}})
    moved.client(native_append(500, rate=24000))
    out = moved.client({"type": "input_audio_buffer.commit", "final": True})
    assert "response.created" in types(out)


# --------------------------------------------- what the turn-based dialect cannot carry
def test_instructions_and_tools_are_refused_coded_and_the_rest_applies() -> None:
    sc = make()
    tools = [{"type": "function", "name": "lookup", "parameters": {}}]
    update = {
        "type": "session.update",
        "event_id": "evt_u",
        "session": {"instructions": "be brief", "tools": tools, "turn_detection": None},
    }
    out = client_events(sc.client(update))
    errors = [e["error"] for e in out if e["type"] == "error"]
    assert [(e["code"], e["param"]) for e in errors] == [
        ("unsupported_by_upstream", "session.instructions"),
        ("unsupported_by_upstream", "session.tools"),
    ]
    assert all(e["event_id"] == "evt_u" for e in errors)
    (updated,) = [e for e in out if e["type"] == "session.updated"]
    assert updated["session"]["instructions"] == ""
    assert updated["session"]["audio"]["input"]["turn_detection"] is None, "the rest applied"
    # Nothing to refuse in empty settings, and an invalid update is that error alone.
    quiet = sc.client({"type": "session.update", "session": {"instructions": "", "tools": []}})
    assert types(quiet) == ["session.updated"]
    bad = {"type": "session.update", "session": {"instructions": "x", "turn_detection": 5}}
    assert [e["error"]["code"] for e in client_events(sc.client(bad))] == ["invalid_value"]


def test_a_text_item_or_response_options_during_an_answer_are_refused_and_it_goes_on() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    item = {
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        },
    }
    (err,) = client_events(sc.client(item))
    assert err["error"]["code"] == "unsupported_event"
    assert "text" in err["error"]["message"]
    options = {"type": "response.create", "response": {"instructions": "say hi"}}
    (err,) = client_events(sc.client(options))
    assert (err["error"]["code"], err["error"]["param"]) == (
        "unsupported_by_upstream",
        "response.instructions",
    )
    t = types(respond(sc, chunks=2))
    assert t.count("response.output_audio.delta") == 2, "the answer goes on"
    done = sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    ended = next(e for e in client_events(done) if e["type"] == "response.done")
    assert ended["response"]["status"] == "completed"


@pytest.mark.parametrize(
    ("native_client", "code", "message"),
    [
        (False, "input_audio_buffer_commit_empty", "the input audio buffer is empty"),
        (
            True,
            "input_audio_buffer_empty",
            "input_audio_buffer.commit requires a non-empty input audio buffer",
        ),
    ],
)
def test_an_empty_commit_is_refused_in_the_clients_own_protocol(
    native_client: bool, code: str, message: str
) -> None:
    """GA's code to a GA client; vLLM-Omni's own (its ``resolve_commit``) to a native one."""
    session = TurnBasedSession(
        "sess_0123456789abcdef", "demo", "demo-up", ShimSettings(), native_client=native_client
    )
    sc = Script(session)
    sc.client({"type": "session.update", "session": {"turn_detection": None}})
    out = sc.client({"type": "input_audio_buffer.commit", "final": True, "event_id": "evt_9"})
    err = client_events(out)[0]
    assert err == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "code": code,
            "message": message,
            "event_id": "evt_9",
            "param": None,
        },
    }
    assert not upstream_events(out)


@pytest.mark.parametrize("auto", [True, False])
def test_a_non_final_commit_is_a_commit_like_any_other(auto: bool) -> None:
    """vLLM-Omni 0.30.0 reads ``final`` into the commit and then submits the turn
    whatever it says: ``final: false`` commits and answers exactly as ``final: true``."""
    seen = {}
    for final in (True, False):
        sc = make()
        sc.client(
            {
                **NATIVE_OPEN,
                "session": {**NATIVE_OPEN["session"], "extra_body": {"auto_response": auto}},
            }
        )
        sc.client(native_append(500))
        out = sc.client({"type": "input_audio_buffer.commit", "final": final})
        sent = upstream_events(out)
        seen[final] = (types(out), [e for e in sent if e["type"] != "input_audio_buffer.append"])
    assert seen[False] == seen[True]
    assert seen[False][0][0] == "input_audio_buffer.committed"
    assert ("response.created" in seen[False][0]) is auto
