"""A GA client's ``instructions`` over a duplex upstream once it has heard audio
(``shim/dialects/ga_instructions.py``): vLLM-Omni 0.30.0 refuses, whole, an update that
changes them after its first accepted append (``engine/duplex/session/control.py``:
``instructions_update_unsupported``), so a change is refused to the client itself and
the rest of the update goes upstream; the same instructions restated go as they are."""

from __future__ import annotations

from typing import Any

import orjson

from shim.actions import ResumeUpstream
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_script import Script, client_events, upstream_events
from tests.test_shim_ga_relay import answer
from tests.test_shim_ga_wait_snapshot import UP, ga, make


def update(sc: Script, session: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The session the upstream gets for the client's update, and what the client is told."""
    ev = {"type": "session.update", "event_id": "evt_i", "session": {"type": "realtime", **session}}
    out = sc.client(ev)
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    return dict(sent["session"]), client_events(out)


def test_before_any_audio_the_instructions_may_change() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sent, told = update(sc, {"instructions": "be brief"})
    assert sent["instructions"] == "be brief"
    assert [e["type"] for e in told] == ["session.updated"]


def test_a_change_after_audio_is_refused_and_the_rest_applies() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    sent, told = update(sc, {"instructions": "be brief", "audio": {"output": {"speed": 1.2}}})
    assert sent.get("instructions", "be kind") == "be kind", "never a change upstream"
    assert sent["audio"]["output"]["speed"] == 1.2
    error, updated = told
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["code"] == "instructions_update_unsupported"
    assert error["error"]["param"] == "session.instructions"
    assert error["error"]["event_id"] == "evt_i"
    assert updated["type"] == "session.updated"
    assert updated["session"]["instructions"] == "be kind"
    # null is a change too (vLLM-Omni clears them); the same ones restated are not.
    sent, told = update(sc, {"instructions": None})
    assert [e["type"] for e in told] == ["error", "session.updated"]
    sent, told = update(sc, {"instructions": "be kind"})
    assert sent["instructions"] == "be kind"
    assert [e["type"] for e in told] == ["session.updated"]


def test_a_voice_and_instructions_change_after_an_answer_are_both_refused() -> None:
    sc = make()
    update(sc, {"instructions": "be kind", "audio": {"output": {"voice": "ash"}}})
    sc.audio(200)
    answer(sc)
    session = {"instructions": "be brief", "audio": {"output": {"voice": "verse", "speed": 1.1}}}
    sent, told = update(sc, session)
    assert sent["audio"]["output"] == {"speed": 1.1}
    assert sent.get("instructions", "be kind") == "be kind"
    codes = [e["error"]["code"] for e in told if e["type"] == "error"]
    assert codes == ["voice_update_after_audio_unsupported", "instructions_update_unsupported"]
    assert told[-1]["type"] == "session.updated"


def test_a_fresh_upstream_session_takes_new_instructions_again() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [restore] = upstream_events(out)
    assert restore["session"]["instructions"] == "be kind"
    ga(sc).bind_upstream({"type": "session.created", "session": {"id": "up-2"}})
    sent, told = update(sc, {"instructions": "be brief"})
    assert sent["instructions"] == "be brief"
    assert [e["type"] for e in told] == ["session.updated"]


def test_a_session_moved_to_another_replica_keeps_its_upstream_locked() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    moved = make(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    ga(moved).restore(snap, resumed, now=sc.now)
    sent, told = update(moved, {"instructions": "be brief"})
    assert sent.get("instructions", "be kind") == "be kind"
    assert [e["type"] for e in told] == ["error", "session.updated"]


def test_a_text_turn_locks_them_too() -> None:
    # vLLM-Omni answers a text item by an append of the conversation
    # (engine/duplex/session/runner.py, supports_text_only_turn): its context locks.
    sc = make()
    update(sc, {"instructions": "triage"})
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    sc.client({"type": "conversation.item.create", "item": item})
    sc.client({"type": "response.create"})
    sent, told = update(sc, {"instructions": "refunds", "tools": []})  # a handoff
    assert sent.get("instructions", "triage") == "triage", sent
    assert [e["type"] for e in told] == ["error", "session.updated"]


FRESH = {"type": "session.created", "session": {"id": "up-2"}, "resume_token": "tok-2"}


def test_audio_sent_while_a_fresh_upstream_is_dialled_locks_it() -> None:
    # The edge holds it for the fresh session, which hears it after its session.created.
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    out = sc.audio(200)
    assert [e["type"] for e in upstream_events(out)] == ["input_audio_buffer.append"]
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    sent, told = update(sc, {"instructions": "be brief", "audio": {"output": {"speed": 1.2}}})
    assert sent.get("instructions", "be kind") == "be kind", sent
    assert [e["type"] for e in told] == ["error", "session.updated"]
    assert told[-1]["session"]["instructions"] == "be kind"


def test_audio_held_through_a_failed_resume_locks_the_fresh_session() -> None:
    # The edge carries what waited for the resume to the fresh session
    # (proxy/emulated/upstream_control.py, settle).
    sc = make()
    update(sc, {"instructions": "be kind"})
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert any(isinstance(a, ResumeUpstream) for a in out)
    sc.audio(200)
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    sent, told = update(sc, {"instructions": "be brief"})
    assert sent.get("instructions", "be kind") == "be kind", sent
    assert [e["type"] for e in told] == ["error", "session.updated"]


def test_a_resume_refused_before_any_audio_leaves_the_fresh_session_open() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    sc.s.handle(UpstreamLost("socket closed", sc.now))
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    sent, told = update(sc, {"instructions": "be brief"})
    assert sent["instructions"] == "be brief"
    assert [e["type"] for e in told] == ["session.updated"]


def test_the_empty_instructions_the_client_was_told_restated() -> None:
    # It is told "" (shim/session_config.py, session_object) where the upstream has
    # none: the same to it, never a change vLLM-Omni would refuse whole.
    sc = make()
    _, told = update(sc, {"audio": {"output": {"speed": 1.0}}})
    assert told[-1]["session"]["instructions"] == ""
    sc.audio(200)
    sent, told = update(sc, {"instructions": ""})
    assert "instructions" not in sent
    assert [e["type"] for e in told] == ["session.updated"]
    sent, told = update(sc, {"instructions": None})
    assert sent.get("instructions") is None  # null is what it has
    assert [e["type"] for e in told] == ["session.updated"]
