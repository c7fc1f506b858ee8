"""A truncate to a negative ``audio_end_ms``, refused as OpenAI GA refuses it
(``invalid_value``, ``param: "audio_end_ms"``, the truncate named) wherever the proxy
answers truncates itself: the GA relay (``shim/dialects/ga_relay.py``) and the
turn-based dialect (``shim/client_events.py``); a native client gets vLLM-Omni's words
for it (``shim/native_truncate.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from shim.dialects.turn_based import TurnBasedSession
from shim.native_client import native_error
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.duplex_relay_script import make as native_relay
from tests.duplex_relay_script import start_response
from tests.shim_ga_relay_script import AID, answer, make
from tests.shim_script import Script, client_events, upstream_events

GA: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)


def ga_relay() -> Script:
    sc = make()
    answer(sc)  # the assistant item AID, 500 ms of it sent
    return sc


def turn_based() -> Script:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    return Script(TurnBasedSession("sess_0123456789abcdef", "m", "m-up", settings))


@pytest.mark.parametrize("session", [ga_relay, turn_based])
@pytest.mark.parametrize("end", [-1, -500])
def test_a_negative_audio_end_ms_is_an_invalid_value_naming_it(session: Any, end: int) -> None:
    sc = session()
    truncate = {"type": "conversation.item.truncate", "event_id": "evt_cut"}
    out = sc.client({**truncate, "item_id": AID, "content_index": 0, "audio_end_ms": end})
    [ev] = client_events(out)
    GA.validate_python({"event_id": "event_1", **ev})
    err = ev["error"]
    assert (err["code"], err["param"], err["event_id"]) == (
        "invalid_value",
        "audio_end_ms",
        "evt_cut",
    )
    assert not upstream_events(out), "nothing refused goes upstream"


def test_a_native_client_gets_vllm_omnis_words_for_it() -> None:
    """engine/duplex/realtime_events.py ``resolve_truncate_item`` with
    protocol/realtime/items.py ``validate_realtime_item_truncate``: of an item it has
    (of one it has not, ``item_not_found`` comes first: tests/test_shim_native_truncate.py)."""
    sc = native_relay(truncates=True)
    start_response(sc, chunks=5)  # the assistant item AID
    out = sc.client({"type": "conversation.item.truncate", "item_id": AID, "audio_end_ms": -1})
    [ev] = client_events(out)
    err = native_error(ev)["error"]
    expected = ("bad_event", "conversation.item.truncate requires non-negative audio_end_ms")
    assert (err["code"], err["message"]) == expected
    assert "param" not in err
