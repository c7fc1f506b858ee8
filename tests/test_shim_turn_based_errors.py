"""duplex_emulated by script: bad input gets an error with a code, a truncate beyond the
audio sent is refused, and an unexpected failure is reported; the session goes on."""

from __future__ import annotations

import pytest

from shim.actions import ReportFault
from shim.fault import fault_actions
from shim.inputs import ClientEvent, VadWindow
from tests.shim_script import client_events, types
from tests.turn_based_script import make, respond, run_turn


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
