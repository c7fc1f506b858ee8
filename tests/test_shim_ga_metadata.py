"""A GA client's ``response.metadata`` over a duplex upstream, by script
(``shim/dialects/ga_response_create.py``): told in the response that create asked for
and in no other, however the upstream refuses the create or the proxy ends the answer."""

from __future__ import annotations

from typing import Any

import pytest

from shim.inputs import UpstreamLost
from tests.shim_ga_relay_script import GA, RID, answer_delta, make
from tests.shim_script import Script, client_events

ASKED = {"purpose": "greeting"}


def told(sc: Script, out: list[Any], kind: str, ga: bool = True) -> Any:
    events = client_events(out)
    for event in events if ga else []:
        GA.validate_python({"event_id": "event_1", **event})
    (ev,) = [e for e in events if e["type"] == kind]
    return ev["response"]["metadata"]


def asked(event_id: str | None = "evt_greet") -> Script:
    sc = make()
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    create = {"type": "response.create", "response": {"metadata": ASKED}}
    sc.client(create if event_id is None else {**create, "event_id": event_id})
    return sc


# vLLM-Omni's words for a bad_event refusing a create's options (engine/duplex/session/
# runner.py ``_on_commit``): a bad_event about any other event answers no create.
RESERVE = "response.create cannot reserve options while another response is active."


def upstream_error(code: str, event_id: str | None = None) -> dict[str, Any]:
    message = RESERVE if code == "bad_event" else "m"
    err = {"type": "invalid_request_error", "code": code, "message": message}
    return {"type": "error", "error": {**err, "event_id": event_id}}


@pytest.mark.parametrize(
    "code", ["response_create_without_input", "text_only_turn_unsupported", "bad_event"]
)
@pytest.mark.parametrize("event_id", [None, "evt_greet"])
def test_a_refused_creates_metadata_is_not_told_in_the_next_response(
    code: str, event_id: str | None
) -> None:
    sc = asked()
    sc.upstream(upstream_error(code, event_id))
    created = sc.upstream({"type": "response.created", "response": {"id": RID}})
    assert told(sc, created, "response.created") is None


def test_an_error_naming_another_event_leaves_the_metadata_to_its_response() -> None:
    sc = asked()
    sc.upstream(upstream_error("invalid_value", "evt_other"))
    created = sc.upstream({"type": "response.created", "response": {"id": RID}})
    assert told(sc, created, "response.created") == ASKED


def test_a_create_that_is_answered_tells_its_metadata() -> None:
    sc = asked(None)
    created = sc.upstream({"type": "response.created", "response": {"id": RID}})
    assert told(sc, created, "response.created") == ASKED


def answered(sc: Script) -> None:
    created = sc.upstream(
        {"type": "response.created", "response": {"id": RID}, "server_event_seq": 10}
    )
    assert told(sc, created, "response.created") == ASKED
    for n in range(30):
        sc.upstream(answer_delta(sample_rate_hz=24000, server_event_seq=11 + n))


def test_the_proxys_own_response_done_of_a_barge_in_tells_the_metadata() -> None:
    sc = asked()
    answered(sc)
    sc.tick(500)
    assert told(sc, sc.speak([0.1] * 5 + [0.95] * 40), "response.done") == ASKED


def test_the_proxys_own_response_done_of_a_lost_upstream_tells_the_metadata() -> None:
    sc = asked()
    answered(sc)
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    assert told(sc, out, "response.done") == ASKED  # GA-valid: the cause is its error


def test_the_proxys_refusal_of_another_event_leaves_the_metadata_waiting() -> None:
    # The openai SDK sets no event ids: the proxy's refusal of an unrelated event
    # names none, and is no answer to the create.
    sc = asked("evt_greet")
    bad = {"type": "conversation.item.truncate", "item_id": "item_nope", "content_index": 0}
    out = sc.client({**bad, "audio_end_ms": 5})
    assert [e["error"]["code"] for e in client_events(out)] == ["item_truncate_invalid_item_id"]
    created = sc.upstream({"type": "response.created", "response": {"id": RID}})
    assert told(sc, created, "response.created") == ASKED
