"""Which create a refusal answers, told a GA client over a duplex upstream, by script
(``shim/dialects/ga_create_ids.py``, ``ga_told.py``): never a wrong name, whatever the
upstream did meanwhile (its VAD's own answers, commits racing it, errors it names
nothing with); and no client event, however malformed, ends the session. Across a
resumed upstream: tests/test_shim_ga_create_ids_resume.py; after a doubtful answer:
tests/test_shim_ga_create_ids_doubt.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from shim.actions import Action, ReportFault
from tests.shim_ga_creates import (
    commit_in_flight,
    commit_refused,
    create,
    created,
    errors,
    refusal,
)
from tests.shim_ga_relay_script import make
from tests.shim_script import detection


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
