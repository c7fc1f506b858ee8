"""A GA client's ``instructions`` over a duplex upstream once it has heard audio
(``shim/dialects/ga_instructions.py``): vLLM-Omni 0.30.0 refuses, whole, an update that
changes them after its first accepted append (``engine/duplex/session/control.py``:
``instructions_update_unsupported``), so a change is refused to the client itself and
the rest of the update goes upstream; the same instructions restated go as they are."""

from __future__ import annotations

from typing import Any

import orjson

from shim.inputs import UpstreamLost
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
