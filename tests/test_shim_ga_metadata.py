"""A GA client's ``response.metadata`` over a duplex upstream, by script
(``shim/dialects/ga_response_create.py``): told in the response that create asked for
and in no other, however the upstream refuses the create or the proxy ends the answer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.shim_script import Script, client_events
from tests.test_shim_ga_relay import GA, RID, make

ASKED = {"purpose": "greeting"}


def told(sc: Script, out: list[Any], kind: str) -> Any:
    events = client_events(out)
    for event in events:
        GA.validate_python({"event_id": "event_1", **event})
    (ev,) = [e for e in events if e["type"] == kind]
    return ev["response"]["metadata"]


def asked(event_id: str | None = "evt_greet") -> Script:
    sc = make()
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    create = {"type": "response.create", "response": {"metadata": ASKED}}
    sc.client(create if event_id is None else {**create, "event_id": event_id})
    return sc


def upstream_error(code: str, event_id: str | None = None) -> dict[str, Any]:
    err = {"type": "invalid_request_error", "code": code, "message": "m", "event_id": event_id}
    return {"type": "error", "error": err}


@pytest.mark.parametrize(
    "code", ["response_create_without_input", "text_only_turn_unsupported", "anything_else"]
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
