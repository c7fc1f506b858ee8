"""Which create a refusal answers, told a GA client over a duplex upstream, by script
(``shim/dialects/ga_create_ids.py``, ``ga_told.py``): never a wrong name, whatever the
upstream did meanwhile; and no client event, however malformed, ends the session."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shim.actions import Action, ReportFault, ResumeUpstream
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_script import Script, client_events, detection
from tests.test_shim_ga_relay import RID, answer_delta, make

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


@pytest.mark.parametrize("item_id", [["x"], {"id": "x"}, 7])
def test_a_malformed_item_id_is_refused_not_a_fault(item_id: Any) -> None:
    sc = make()
    out = sc.client({"type": "conversation.item.retrieve", "item_id": item_id})
    assert not [a for a in out if isinstance(a, ReportFault)], out
    assert "internal_error" not in [e["code"] for e in errors(out)], out
    # The session goes on: a create still reaches the upstream.
    create(sc, "evt_after")
    assert created(sc)["type"] == "response.created"


def test_a_fault_while_telling_the_client_is_an_internal_error_not_an_exception() -> None:
    sc = make()

    class Broken:
        def told(self, *args: Any) -> list[Action]:
            raise RuntimeError("broken")

    sc.s.told = Broken()  # type: ignore[assignment,attr-defined]
    out = sc.client({"type": "input_audio_buffer.clear", "event_id": "evt_x"})
    assert [e["code"] for e in errors(out)] == ["internal_error"], out
    assert [a for a in out if isinstance(a, ReportFault)], out


@pytest.mark.parametrize("fresh", ["lost", "reattached"])
def test_a_create_lost_with_its_upstream_is_never_named_later(fresh: str) -> None:
    sc = make()
    create(sc, "evt_a")
    sc.s.handle(UpstreamLost("gone", sc.now, resume=False))
    if fresh == "reattached":
        event = {"type": "session.created", "session": {"id": "up-2"}}
        sc.s.handle(UpstreamReattached(event, sc.now))
    create(sc, "evt_b")
    created(sc)
    create(sc, "evt_c", {"asked": "c"})
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_c", refused
    # C's metadata went with its refusal, not onto the next response.
    assert created(sc, "resp-2")["response"]["metadata"] is None


def resumed(sc: Script) -> None:
    """The upstream socket drops and the upstream's own session comes back on a new one."""
    out = sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert [type(a) for a in out] == [ResumeUpstream], out
    back = {"type": "session.resumed", "session_id": "up-1", "resume_token": "tok-2"}
    sc.s.handle(UpstreamReattached(back, sc.now))


def test_creates_waiting_across_a_resumed_upstream_are_named_none_later_ones_named() -> None:
    sc = make()
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    create(sc, "evt_a", {"asked": "a"})
    # evt_a may have died with the socket: its answer may come or not, told unnamed.
    resumed(sc)
    assert created(sc)["response"]["metadata"] is None
    create(sc, "evt_b")  # sent after the resume: its answer comes after any of those
    create(sc, "evt_c", {"asked": "c"})
    named = [errors(sc.upstream(refusal()))[0]["event_id"] for _ in range(2)]
    assert named == ["evt_b", "evt_c"], named
    assert created(sc, "resp-2")["response"]["metadata"] is None, "c's went with its refusal"


def test_a_response_created_before_a_resume_still_tells_its_metadata_when_done() -> None:
    sc = make()
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    create(sc, "evt_a", {"asked": "a"})
    assert created(sc)["response"]["metadata"] == {"asked": "a"}
    resumed(sc)  # the same session goes on with that response
    done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
    (ev,) = [e for e in client_events(sc.upstream(done)) if e["type"] == "response.done"]
    assert ev["response"]["metadata"] == {"asked": "a"}, ev


def test_a_create_lost_in_the_dropped_socket_is_not_named_later() -> None:
    """evt_a was written into the socket as it dropped and never reached the upstream
    (``proxy/emulated/upstream_control.py`` drops such frames): the resumed session
    answers it never, so the next unnamed refusal is not evt_a's."""
    sc = make()
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    create(sc, "evt_a", {"asked": "a"})
    resumed(sc)
    create(sc, "evt_b", {"asked": "b"})
    # evt_b's refusal, or evt_a's had it arrived: which, the proxy cannot tell.
    [refused] = errors(sc.upstream(refusal()))
    assert refused.get("event_id") is None, refused
    create(sc, "evt_c", {"asked": "c"})
    auto = created(sc)  # c's answer, or b's: no one's metadata on it
    assert auto["response"]["metadata"] is None, auto
    [refused] = errors(sc.upstream(refusal()))
    assert refused.get("event_id") is None, refused


def test_a_server_vad_answer_due_across_a_resume_still_answers_no_create() -> None:
    sc = make()
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    detection(sc, True)
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_u1"})
    resumed(sc)  # the VAD's answer is still to come, replayed by the same session
    create(sc, "evt_b", {"asked": "b"})
    assert created(sc, "resp-auto")["response"]["metadata"] is None
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_b", refused


def test_a_client_commit_lost_in_the_dropped_socket_leaves_no_create_misnamed() -> None:
    """The client's commit may have died with the socket: the upstream's next commit
    is its own VAD's or that commit's, and which response answers which create is
    no longer known."""
    sc = make()
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    detection(sc, True)
    sc.audio(300, amplitude=500)
    assert not errors(sc.client({"type": "input_audio_buffer.commit", "event_id": "evt_commit"}))
    resumed(sc)
    create(sc, "evt_b", {"asked": "b"})
    create(sc, "evt_c")
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_vad"})
    assert created(sc, "resp-auto")["response"]["metadata"] is None
    [refused] = errors(sc.upstream(refusal()))
    assert refused.get("event_id") is None, refused


def test_a_refusal_naming_another_create_still_takes_the_refused_ones_metadata() -> None:
    sc = make()
    create(sc, "evt_c", {"asked": "c"})
    sc.upstream({**refusal(), "error": {**refusal()["error"], "event_id": "evt_other"}})
    assert created(sc)["response"]["metadata"] is None


def test_a_server_vad_answer_answers_no_client_create() -> None:
    sc = make()
    detection(sc, True)
    create(sc, "evt_mine", {"asked": "mine"})
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_u1"})
    auto = created(sc, "resp-auto")  # the upstream's own answer to its VAD's turn
    assert auto["response"]["metadata"] is None
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_mine", refused


def test_an_unknown_unnamed_upstream_error_stops_the_naming_rather_than_shift() -> None:
    sc = make()
    create(sc, "evt_a")
    create(sc, "evt_b")
    sc.upstream(refusal("internal_error_of_its_own"))  # maybe evt_a's answer, maybe not
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] is None, refused


def test_creates_beyond_those_named_are_counted_not_shifted() -> None:
    sc = make()
    ids = [f"evt_{n:02d}" for n in range(20)]
    for event_id in ids:
        create(sc, event_id)
    named = [errors(sc.upstream(refusal()))[0]["event_id"] for _ in ids]
    assert named == ids[:16] + [None] * 4, named
    create(sc, "evt_next")  # all answered: named again
    assert errors(sc.upstream(refusal()))[0]["event_id"] == "evt_next"


def test_the_clients_own_commit_under_server_vad_is_answered_by_its_create() -> None:
    sc = make()
    detection(sc, True)
    sc.audio(300, amplitude=500)
    out = sc.client({"type": "input_audio_buffer.commit", "event_id": "evt_commit"})
    assert not errors(out), out
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_u1"})
    create(sc, "evt_a")
    created(sc)  # answers evt_a, which asked for it
    create(sc, "evt_b")
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_b", refused


@pytest.mark.parametrize("code", ["input_audio_buffer_empty", "commit_aborted"])
def test_a_client_commit_the_upstream_refuses_is_no_turn_it_answers(code: str) -> None:
    sc = make()
    detection(sc, True)
    sc.audio(300, amplitude=500)
    assert not errors(sc.client({"type": "input_audio_buffer.commit", "event_id": "evt_commit"}))
    # vLLM-Omni's words (engine/duplex/realtime_events.py ``resolve_commit``): its VAD
    # committed the buffer first, or the append before the commit failed.
    message = "input_audio_buffer.commit requires a non-empty input audio buffer"
    err = {"type": "invalid_request_error", "code": code, "message": message}
    sc.upstream({"type": "error", "error": {**err, "event_id": "evt_commit"}})
    create(sc, "evt_mine", {"asked": "mine"})
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_u2"})
    auto = created(sc, "resp-auto")  # the upstream's own answer to its VAD's turn
    assert auto["response"]["metadata"] is None, auto
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_mine", refused


# vLLM-Omni 0.30.0's words (engine/duplex/session/runner.py ``_on_commit``, its
# ``_on_append_audio``; protocol/realtime/audio_input.py).
RESERVE = "response.create cannot reserve options while another response is active."
NOT_BASE64 = "input audio is not valid base64"


def bad_event(message: str) -> dict[str, Any]:
    err = {"type": "invalid_request_error", "code": "bad_event", "message": message}
    return {"type": "error", "error": err}


def test_a_bad_event_about_a_create_refuses_the_oldest_waiting() -> None:
    sc = make()
    create(sc, "evt_a", {"asked": "a"})
    [refused] = errors(sc.upstream(bad_event(RESERVE)))
    assert refused["event_id"] == "evt_a", refused
    assert created(sc)["response"]["metadata"] is None, "a's went with its refusal"


def test_a_bad_event_about_another_event_answers_no_create() -> None:
    sc = make()
    create(sc, "evt_a", {"asked": "a"})
    [passed] = errors(sc.upstream(bad_event(NOT_BASE64)))
    assert passed.get("event_id") is None and passed["message"] == NOT_BASE64, passed
    assert created(sc)["response"]["metadata"] == {"asked": "a"}
    create(sc, "evt_b")
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_b", "still named: no create was answered unseen"


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


@pytest.mark.parametrize("named", ["evt_commit", None])
def test_a_vad_commit_racing_a_client_commit_is_still_the_vads(named: str | None) -> None:
    """The upstream's VAD commits the buffer while the client's commit is in flight:
    its committed comes first, then the refusal of the client's commit."""
    sc = make()
    commit_in_flight(sc)
    create(sc, "evt_mine", {"asked": "mine"})
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_vad"})
    commit_refused(sc, named)
    auto = created(sc, "resp-auto")  # the upstream's own answer to its VAD's turn
    assert auto["response"]["metadata"] is None, auto
    [refused] = errors(sc.upstream(refusal()))
    assert refused["event_id"] == "evt_mine", refused


def test_a_vad_answer_before_the_refusal_of_the_racing_commit_leaves_no_name_shifted() -> None:
    """The VAD's own answer came before the refusal showed its commit was the VAD's:
    it was taken for evt_mine's, so which create the next refusal answers is unknown."""
    sc = make()
    commit_in_flight(sc)
    create(sc, "evt_mine")
    create(sc, "evt_next")
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_vad"})
    created(sc, "resp-auto")
    commit_refused(sc)
    [refused] = errors(sc.upstream(refusal()))  # evt_mine's
    assert refused.get("event_id") is None, refused


def test_a_vad_commit_racing_one_of_two_client_commits_names_no_create_after() -> None:
    """Two client commits on their way, one committed, one refused: the committed was
    the first's and the refusal the second's, or the VAD's and the first's."""
    sc = make()
    commit_in_flight(sc)
    sc.audio(300, amplitude=500)
    assert not errors(sc.client({"type": "input_audio_buffer.commit", "event_id": "evt_2"}))
    create(sc, "evt_mine", {"asked": "mine"})
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_1"})
    commit_refused(sc)
    maybe_own = created(sc, "resp-maybe")
    assert maybe_own["response"]["metadata"] is None, maybe_own
    [refused] = errors(sc.upstream(refusal()))
    assert refused.get("event_id") is None, refused


def test_a_response_answering_a_create_with_a_later_one_waiting_tells_not_its_metadata() -> None:
    """The metadata kept is the latest create's: the answer to an earlier one is not
    told it (it answers evt_a, which asked none), the latest's answer is."""
    sc = make()
    create(sc, "evt_a")
    create(sc, "evt_b", {"asked": "b"})
    assert created(sc, "resp-a")["response"]["metadata"] is None
    assert created(sc, "resp-b")["response"]["metadata"] == {"asked": "b"}


def done(sc: Script, rid: str = RID) -> dict[str, Any]:
    ev = {"type": "response.done", "response": {"id": rid, "status": "completed"}}
    (told,) = [e for e in client_events(sc.upstream(ev)) if e["type"] == "response.done"]
    return told


def doubt_by_an_empty_second_commit(sc: Script) -> str:
    """Server VAD answering its turns: the client commits, then commits again with
    nothing new, which vLLM-Omni refuses (an empty buffer). Its committed was the first
    commit's, or its VAD's with the refusal the first's: the next response is maybe the
    upstream's own, so the create waiting is counted unsure."""
    commit_in_flight(sc)
    sc.upstream({"type": "input_audio_buffer.committed", "item_id": "item_1"})
    assert not errors(sc.client({"type": "input_audio_buffer.commit", "event_id": "evt_2"}))
    commit_refused(sc, "evt_2")
    create(sc, "evt_a", {"asked": "a"})
    assert created(sc, "resp-a")["response"]["metadata"] is None  # maybe its own
    return "resp-a"


def doubt_by_a_create_lost_in_the_dropped_socket(sc: Script) -> str:
    """evt_lost may have died with the socket: resp-b is its answer or evt_b's."""
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    create(sc, "evt_lost", {"asked": "lost"})
    resumed(sc)
    create(sc, "evt_b", {"asked": "b"})
    assert created(sc, "resp-b")["response"]["metadata"] is None
    return "resp-b"


DOUBTS = [doubt_by_an_empty_second_commit, doubt_by_a_create_lost_in_the_dropped_socket]


@pytest.mark.parametrize("doubt", DOUBTS)
def test_naming_and_metadata_start_again_once_the_doubt_drains(
    doubt: Callable[[Script], str],
) -> None:
    """One doubtful answer ended naming and metadata for the rest of the session. The
    upstream's response.done with nothing forwarded since its response.created and
    nothing else on its way is a quiet point: every create sent was answered."""
    sc = make()
    assert done(sc, doubt(sc))["response"]["metadata"] is None
    for n in range(3):  # later turns, one at a time
        create(sc, f"evt_{n}", {"asked": str(n)})
        assert created(sc, f"resp-{n}")["response"]["metadata"] == {"asked": str(n)}
        assert done(sc, f"resp-{n}")["response"]["metadata"] == {"asked": str(n)}
    create(sc, "evt_busy", {"asked": "busy"})
    create(sc, "evt_next")
    named = [errors(sc.upstream(refusal()))[0]["event_id"] for _ in range(2)]
    assert named == ["evt_busy", "evt_next"], named


@pytest.mark.parametrize("doubt", DOUBTS)
def test_no_create_is_misnamed_while_the_doubt_lasts(doubt: Callable[[Script], str]) -> None:
    """Before a quiet point, a refusal may answer the doubtful create or a later one:
    named none. A response.done while a create forwarded after the last
    response.created may not have reached the upstream yet is no quiet point."""
    sc = make()
    rid = doubt(sc)
    create(sc, "evt_x", {"asked": "x"})  # on its way as the response ends
    done(sc, rid)
    [refused] = errors(sc.upstream(refusal()))  # evt_x's, or the doubtful one's
    assert refused.get("event_id") is None, refused
    create(sc, "evt_y", {"asked": "y"})
    told = created(sc, "resp-y")  # evt_y's, or evt_x's: no one's metadata
    assert told["response"]["metadata"] is None, told
    [refused] = errors(sc.upstream(refusal()))
    assert refused.get("event_id") is None, refused


def test_a_response_the_proxy_cut_is_no_quiet_point() -> None:
    """The proxy tells the end of a response it cut itself (a barge-in), while the
    upstream may still run it (its own response.done, when it comes, is dropped): the
    doubt stays."""
    sc = make()
    sc.s.bind_upstream({"type": "session.created", "session_id": "up-1", "resume_token": "tok-1"})
    create(sc, "evt_lost")
    resumed(sc)
    create(sc, "evt_b")
    created(sc, RID)  # evt_lost's answer or evt_b's
    for _ in range(30):
        sc.upstream(answer_delta(sample_rate_hz=24000))
    sc.tick(500)
    out = sc.speak([0.1] * 5 + [0.95] * 40)
    assert [e for e in client_events(out) if e["type"] == "response.done"], "cut"
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "cancelled"}})
    create(sc, "evt_c")
    [refused] = errors(sc.upstream(refusal()))
    assert refused.get("event_id") is None, refused
