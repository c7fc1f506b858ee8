"""duplex_emulated by script: what the turn-based dialect cannot carry (other event types,
instructions and tools, text items and response options during an answer, an empty
commit) is refused with a code in the client's own protocol, and the rest applies."""

from __future__ import annotations

import pytest

from shim.actions import SendClient
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from tests.shim_script import Script, client_events, types, upstream_events
from tests.turn_based_script import make, respond, run_turn


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
