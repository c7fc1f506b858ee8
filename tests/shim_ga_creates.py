"""Script steps for the create-naming tests (tests/test_shim_ga_create_ids*.py): a GA
client's ``response.create``, the upstream's answers and refusals, a resumed upstream,
a client commit the upstream's VAD beat.
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action, ResumeUpstream
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_ga_relay_script import RID
from tests.shim_script import Script, client_events, detection

BUSY = "conversation_already_has_active_response"


def refusal(code: str = BUSY) -> dict[str, Any]:
    err = {"type": "invalid_request_error", "code": code, "message": "busy", "event_id": None}
    return {"type": "error", "error": err}


def errors(out: list[Action]) -> list[dict[str, Any]]:
    return [e["error"] for e in client_events(out) if e["type"] == "error"]


def create(sc: Script, event_id: str, metadata: dict[str, str] | None = None) -> None:
    options = {} if metadata is None else {"metadata": metadata}
    sc.client({"type": "response.create", "event_id": event_id, "response": options})


def created(sc: Script, rid: str = RID) -> dict[str, Any]:
    (ev,) = [
        e
        for e in client_events(sc.upstream({"type": "response.created", "response": {"id": rid}}))
        if e["type"] == "response.created"
    ]
    return ev


def resumed(sc: Script) -> None:
    """The upstream socket drops and the upstream's own session comes back on a new one."""
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert [type(a) for a in out] == [ResumeUpstream], out
    back = {"type": "session.resumed", "session_id": "up-1", "resume_token": "tok-2"}
    sc.s.handle(UpstreamReattached(back, sc.now))


def commit_refused(sc: Script, event_id: str | None = "evt_commit") -> list[Action]:
    """vLLM-Omni's refusal of a commit whose buffer its VAD committed first (its
    engine/duplex/realtime_events.py ``resolve_commit`` names the commit; its runner's
    own check, engine/duplex/session/runner.py ``_on_commit``, names none)."""
    message = "input_audio_buffer.commit requires a non-empty input audio buffer"
    err = {"type": "invalid_request_error", "code": "input_audio_buffer_empty", "message": message}
    return sc.upstream({"type": "error", "error": {**err, "event_id": event_id}})


def commit_in_flight(sc: Script) -> None:
    detection(sc, True)
    sc.audio(300, amplitude=500)
    assert not errors(sc.client({"type": "input_audio_buffer.commit", "event_id": "evt_commit"}))


def done(sc: Script, rid: str = RID) -> dict[str, Any]:
    ev = {"type": "response.done", "response": {"id": rid, "status": "completed"}}
    (told,) = [e for e in client_events(sc.upstream(ev)) if e["type"] == "response.done"]
    return told
