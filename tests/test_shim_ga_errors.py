"""Upstream errors as a GA client gets them (``shim/dialects/ga_events.py``)."""

from __future__ import annotations

from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from shim.dialects import ga_events

SERVER_EVENT: TypeAdapter[RealtimeServerEvent] = TypeAdapter(RealtimeServerEvent)


def test_vllm_omnis_empty_commit_code_reaches_a_ga_client_as_openais() -> None:
    upstream = {
        "type": "error",
        "event_id": "event_1",
        "error": {
            "type": "invalid_request_error",
            "code": "input_audio_buffer_empty",
            "message": "Input audio buffer is empty",
        },
    }
    out = ga_events.translate(upstream)
    assert out is not None
    assert out["error"]["code"] == "input_audio_buffer_commit_empty"
    assert out["error"]["message"] == "Input audio buffer is empty"
    assert upstream["error"]["code"] == "input_audio_buffer_empty"  # a copy was changed
    SERVER_EVENT.validate_python(out)


def test_other_upstream_errors_pass_unchanged() -> None:
    for error in ({"type": "server_error", "code": "resource_exhausted", "message": "m"}, "x"):
        ev = {"type": "error", "event_id": "event_2", "error": error}
        assert ga_events.translate(ev) is ev
