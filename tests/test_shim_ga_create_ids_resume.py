"""Which create a refusal answers across a lost or resumed upstream, by script
(``shim/dialects/ga_create_ids.py``): a create that may have died with the socket is
never named later, and the metadata of a response created before the resume is
still told.
"""

from __future__ import annotations

import pytest

from shim.inputs import UpstreamLost, UpstreamReattached
from tests.shim_ga_creates import (
    create,
    created,
    errors,
    refusal,
    resumed,
)
from tests.shim_ga_relay_script import RID, make
from tests.shim_script import client_events, detection


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
