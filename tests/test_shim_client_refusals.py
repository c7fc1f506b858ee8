"""Client events (and inputs) both emulated sessions refuse, by script through ``handle``:
one coded error each, nothing refused goes upstream, and what the relay cannot read
vLLM-Omni refuses itself."""

from __future__ import annotations

from typing import Any

import pytest

from shim.actions import SendUpstream
from shim.audio import b64encode
from tests.shim_edge_scripts import (
    T_UNKNOWN,
    errors,
    relay,
    start_turn,
    the,
    turn_audio,
    turn_based,
)
from tests.shim_script import client_events, upstream_events


@pytest.mark.parametrize("make", [turn_based, relay])
@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"type": "input_audio_buffer.append"}, "invalid_event"),
        ({"type": "input_audio_buffer.append", "audio": "!!"}, "invalid_audio"),
        ({"type": "input_audio_buffer.append", "audio": b64encode(b"\x00")}, "invalid_audio"),
        ({"type": "input_audio_buffer.append", "audio": ""}, "invalid_audio"),
        ({"type": "playback.ack", "played_ms": True}, "invalid_event"),
        ({"type": "playback.ack", "played_ms": "10"}, "invalid_event"),
        # A truncate: (a GA client's code, a native one's: vLLM-Omni reads the event,
        # taking any number, then looks the item up; shim/native_truncate.py).
        (
            {"type": "conversation.item.truncate", "audio_end_ms": 0},
            ("invalid_event", "missing_item_id"),
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": -1},
            ("invalid_value", "item_not_found"),
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": 1.5},
            ("invalid_event", "item_not_found"),
        ),
        (
            {"type": "conversation.item.truncate", "item_id": "i", "audio_end_ms": 0},
            (T_UNKNOWN, "item_not_found"),  # GA's code names the request
        ),
    ],
)
def test_bad_client_events_get_one_coded_error(
    make: Any, event: dict[str, Any], code: str | tuple[str, str]
) -> None:
    sc = make()
    if isinstance(code, tuple):
        code = code[sc.s.config.native]
    out = sc.client({**event, "event_id": "evt_7"})
    if make is relay and event["type"] != "conversation.item.truncate":
        # What the relay cannot read, vLLM-Omni refuses itself, in its own words.
        assert not errors(out)
        assert upstream_events(out) == [{**event, "event_id": "evt_7"}]
        return
    (err,) = errors(out)
    assert err["code"] == code
    assert err["event_id"] == "evt_7"
    assert not upstream_events(out), "nothing refused goes upstream"


def test_a_truncate_beyond_the_audio_sent_is_refused() -> None:
    sc = turn_based()
    start_turn(sc, audio_ms=500)
    item = the(client_events(turn_audio(sc)), "response.output_audio.delta")["item_id"]
    (err,) = errors(
        sc.client({"type": "conversation.item.truncate", "item_id": item, "audio_end_ms": 5000})
    )
    assert err["code"] == "invalid_value" and err["param"] == "audio_end_ms"


def test_an_unknown_item_is_not_found_in_duplex_emulated_and_asked_upstream_in_the_relay() -> None:
    (err,) = errors(turn_based().client({"type": "conversation.item.retrieve", "item_id": "x"}))
    assert err["code"] == "item_retrieve_invalid_item_id"
    ask = {"type": "conversation.item.retrieve", "item_id": "x"}
    assert relay().client(ask) == [SendUpstream(ask)]


class NotAnInput:
    now_ms = 0.0


def test_an_input_that_is_not_one_is_refused_loudly() -> None:
    try:
        out = turn_based().s.handle(NotAnInput())  # type: ignore[arg-type]
    except TypeError:
        return  # a programming error, raised
    assert [e["code"] for e in errors(out)] == ["internal_error"]  # or reported as one
