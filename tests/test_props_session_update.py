"""Properties of ``session.update`` as both emulated sessions apply it (through ``handle``).

Valid updates apply and round-trip (``session.updated`` read back as an update, and
``snapshot()``/``restore()``); invalid ones answer one coded ``error`` and change
nothing; no payload at all makes ``handle`` raise. Payloads go through orjson first,
so they are exactly what the client reader can hand the shim
(tests/session_update_props.py).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shim.actions import SendClient, SendUpstream
from shim.dialects.relay_wire import upstream_settings
from shim.native_formats import as_the_proxy_reads
from shim.session_config import session_object
from tests.session_update_props import (
    ERROR_CODES,
    MAKERS,
    PROPS,
    errors,
    invalid_updates,
    json_values,
    send,
    valid_updates,
)


@pytest.mark.parametrize("dialect", sorted(MAKERS))
@PROPS
@given(event=valid_updates())
def test_a_valid_update_applies_and_round_trips(dialect: str, event: dict[str, Any]) -> None:
    session = MAKERS[dialect]()
    if dialect == "turn" and isinstance(event.get("session"), dict):
        # Refused over a turn-based upstream (tests/test_shim_turn_based_cannot_carry.py).
        event = {**event, "session": {**event["session"], "instructions": None}}
    out = send(session, event)
    assert not errors(out), out
    cfg = session.config
    shown = session_object(session.session_id, session.model, cfg)
    if dialect == "turn":
        # The proxy answers session.updated itself, from the config it now holds.
        (updated,) = [a.event for a in out if isinstance(a, SendClient)]
        assert updated == {"type": "session.updated", "session": shown}
    else:
        # The relay forwards the update whole: turn detection included, as a strict
        # upstream detects turns only under server_vad (the proxy's VAD reads it too).
        (up,) = [a.event for a in out if isinstance(a, SendUpstream)]
        assert up == event
    # What the session says it holds reads back as the same config.
    again = MAKERS[dialect]()
    assert not errors(send(again, {"type": "session.update", "session": shown}))
    assert session_object(again.session_id, again.model, again.config) == shown
    # A snapshot carries the config to another replica.
    moved = MAKERS[dialect]()
    moved.restore(orjson.loads(orjson.dumps(session.snapshot())))
    assert session_object(moved.session_id, moved.model, moved.config) == shown
    # Empty instructions and none at all are the same setting (both shown as "").
    assert same_setting(moved.snapshot()) == same_setting(session.snapshot())


def same_setting(snap: dict[str, Any]) -> dict[str, Any]:
    return {**snap, "instructions": snap.get("instructions") or None}


@pytest.mark.parametrize("dialect", sorted(MAKERS))
@PROPS
@given(first=valid_updates(), event=invalid_updates())
def test_an_invalid_update_is_one_coded_error_and_changes_nothing(
    dialect: str, first: dict[str, Any], event: dict[str, Any]
) -> None:
    session = MAKERS[dialect]()
    send(session, first)
    before, snap = session.config, session.snapshot()
    out = send(session, event)
    if dialect == "relay" and not errors(out):
        assert [a.event for a in out if isinstance(a, SendUpstream)] == [upstream_settings(event)]
        if session.snapshot() == snap:
            # An audio format vLLM-Omni refuses is its to refuse, in its words.
            assert session.config == before
            return
        # Valid as vLLM-Omni reads a native client's update (its flat names before the
        # nested ones: shim/native_formats.py), so applied on both sides, as so read.
        fresh = MAKERS[dialect]()
        send(fresh, first)
        assert not errors(send(fresh, as_the_proxy_reads(event)))
        assert fresh.config == session.config
        return
    (err,) = errors(out)
    assert len(out) == 1, "nothing goes upstream for a refused update"
    assert err["code"] in ERROR_CODES
    assert err["type"] == "invalid_request_error"
    assert isinstance(err["message"], str) and err["message"]
    event_id = event.get("event_id")
    assert err["event_id"] == (event_id if isinstance(event_id, str) else None)
    assert session.config == before
    assert session.snapshot() == snap


@pytest.mark.parametrize("dialect", sorted(MAKERS))
@PROPS
@given(
    session_value=json_values,
    extra=st.dictionaries(st.text(max_size=12), json_values, max_size=3),
)
def test_no_update_payload_makes_handle_raise(
    dialect: str, session_value: Any, extra: dict[str, Any]
) -> None:
    session = MAKERS[dialect]()
    before = session.config
    event = {**extra, "type": "session.update"}
    if session_value is not None:
        event["session"] = session_value
    out = send(session, event)
    errs = errors(out)
    if errs:
        assert len(errs) == 1 and errs[0]["code"] in ERROR_CODES
        assert session.config == before
