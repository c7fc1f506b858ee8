"""Naming creates after a doubtful answer, by script
(``shim/dialects/ga_create_ids.py``): while the doubt lasts no create is named and no
metadata told; a quiet point (a response done with nothing on its way) starts both
again, and a response the proxy cut itself is no quiet point.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.shim_ga_creates import (
    commit_in_flight,
    commit_refused,
    create,
    created,
    done,
    errors,
    refusal,
    resumed,
)
from tests.shim_ga_relay_script import RID, answer_delta, make
from tests.shim_script import Script, client_events


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
