"""A GA client's ``instructions`` over a duplex upstream once its model has taken input
(``shim/dialects/ga_instructions.py``, ``shim/dialects/relay_context_lock.py``):
vLLM-Omni 0.30.0 refuses, whole, an update that changes them after its first accepted
append (``engine/duplex/session/control.py``: ``instructions_update_unsupported``), and
an append reaches its model when it takes a turn, or, auto-responding, a whole chunk of
audio. So a change then is refused to the client itself and the rest of the update goes
upstream; the same instructions restated go as they are; before, they change freely."""

from __future__ import annotations

import orjson
import pytest

from shim.actions import ResumeUpstream
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_ga_instructions_lock import USER_TEXT, changes, make_with, update
from tests.shim_ga_relay_script import answer
from tests.shim_ga_resumable import UP, ga, make
from tests.shim_script import upstream_events


def test_before_any_audio_the_instructions_may_change() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sent, told = update(sc, {"instructions": "be brief"})
    assert sent["instructions"] == "be brief"
    assert [e["type"] for e in told] == ["session.updated"]


def test_a_change_after_a_turn_is_refused_and_the_rest_applies() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    answer(sc)  # the upstream's server VAD answered a turn: its model took the audio
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
    answer(sc)
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
    answer(sc)
    snap = orjson.loads(orjson.dumps(sc.s.snapshot()))
    moved = make(bound=False)
    resumed = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}
    ga(moved).restore(snap, resumed, now=sc.now)
    sent, told = update(moved, {"instructions": "be brief"})
    assert sent.get("instructions", "be kind") == "be kind"
    assert [e["type"] for e in told] == ["error", "session.updated"]


def test_audio_alone_leaves_them_free() -> None:
    # Appended and buffered, or committed asking no answer: the model has taken none of
    # it (engine/duplex/session/runner.py: no append reaches it without a turn).
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    assert changes(sc)
    sc.client({"type": "input_audio_buffer.commit"})
    assert changes(sc)


def test_a_response_create_over_committed_audio_locks_them() -> None:
    sc = make()
    sc.voice(200)
    sc.client({"type": "input_audio_buffer.commit"})
    sc.client({"type": "response.create"})  # goes before the upstream answers it
    assert not changes(sc)


def test_a_response_create_refused_for_want_of_input_leaves_them_free() -> None:
    sc = make()
    sc.client({"type": "response.create"})  # response_create_without_input upstream
    assert changes(sc)


@pytest.mark.parametrize("text_turns", [True, False])
def test_a_text_turn_locks_them_where_the_model_takes_one(text_turns: bool) -> None:
    # vLLM-Omni answers text items alone by an append of the conversation on a model
    # with supports_text_only_turn (engine/duplex/session/runner.py), which locks; any
    # other refuses the turn (text_only_turn_unsupported), and nothing is taken.
    sc = make_with(supports_text_only_turn=text_turns)
    update(sc, {"instructions": "triage"})
    sc.client(USER_TEXT)
    sc.client({"type": "response.create"})
    assert changes(sc) is not text_turns  # a handoff


@pytest.mark.parametrize(("audio_ms", "locks"), [(60, False), (80, True)])
def test_an_auto_responding_session_locks_at_its_first_whole_chunk(
    audio_ms: int, locks: bool
) -> None:
    # engine/duplex/session/runner.py (_on_append_audio: allow_emit) hands the model
    # each whole chunk_period_ms of audio as it fills, with extra_body.auto_response.
    sc = make_with(chunk_period_ms=80)
    update(sc, {"instructions": "be kind", "extra_body": {"auto_response": True}})
    sc.audio(audio_ms)
    assert changes(sc) is not locks


FRESH = {"type": "session.created", "session": {"id": "up-2"}, "resume_token": "tok-2"}


def test_a_turn_asked_for_while_a_fresh_upstream_is_dialled_locks_it() -> None:
    # The edge holds it for the fresh session, which hears it after its session.created.
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    out = sc.voice(200)
    assert {e["type"] for e in upstream_events(out)} == {"input_audio_buffer.append"}
    sc.client({"type": "input_audio_buffer.commit"})
    sc.client({"type": "response.create"})
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    sent, told = update(sc, {"instructions": "be brief", "audio": {"output": {"speed": 1.2}}})
    assert sent.get("instructions", "be kind") == "be kind", sent
    assert [e["type"] for e in told] == ["error", "session.updated"]
    assert told[-1]["session"]["instructions"] == "be kind"


def test_a_turn_held_through_a_failed_resume_locks_the_fresh_session() -> None:
    # The edge carries what waited for the resume to the fresh session
    # (proxy/emulated/upstream_control.py, settle).
    sc = make()
    update(sc, {"instructions": "be kind"})
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert any(isinstance(a, ResumeUpstream) for a in out)
    sc.voice(200)
    sc.client({"type": "input_audio_buffer.commit"})
    sc.client({"type": "response.create"})
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    sent, told = update(sc, {"instructions": "be brief"})
    assert sent.get("instructions", "be kind") == "be kind", sent
    assert [e["type"] for e in told] == ["error", "session.updated"]


def test_a_resume_refused_before_any_audio_leaves_the_fresh_session_open() -> None:
    sc = make()
    update(sc, {"instructions": "be kind"})
    sc.audio(200)
    answer(sc)
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
    answer(sc)
    sent, told = update(sc, {"instructions": ""})
    assert "instructions" not in sent
    assert [e["type"] for e in told] == ["session.updated"]
    sent, told = update(sc, {"instructions": None})
    assert sent.get("instructions") is None  # null is what it has
    assert [e["type"] for e in told] == ["session.updated"]
