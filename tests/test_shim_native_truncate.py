"""A native client's ``conversation.item.truncate``, answered as vLLM-Omni 0.30.0 answers
it (``shim/native_truncate.py``): the item looked up before the sign of ``audio_end_ms``
is, any number taken (``int()`` of it), refusals in its codes and words; a GA client's
stays as GA has it (``tests/test_shim_ga_truncate_refusals.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from shim import native_truncate
from shim.dialects.turn_based import TurnBasedSession
from shim.native_client import native_error
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.duplex_relay_script import AID, start_response
from tests.duplex_relay_script import make as relay
from tests.shim_script import Script, client_events, pcm_b64, types, upstream_events

SETTINGS = ShimSettings(vad=VadParams(), echo_suppression=False)
NEGATIVE = ("bad_event", "conversation.item.truncate requires non-negative audio_end_ms")


def turn_based() -> Script:
    return Script(TurnBasedSession("sess_0123456789abcdef", "m", "m-up", SETTINGS, True))


def answered() -> Script:
    """A native relay whose upstream sent 1 s of the answer ``AID``."""
    sc = relay(truncates=True)
    start_response(sc, chunks=10)
    return sc


def refusal(sc: Script, **fields: Any) -> tuple[Any, ...]:
    out = sc.client({"type": "conversation.item.truncate", "event_id": "evt_cut", **fields})
    [ev] = client_events(out)
    assert not upstream_events(out), "nothing refused goes upstream"
    err = native_error(ev)["error"]
    return err["code"], err["message"], err.get("param", "absent"), err.get("event_id")


@pytest.mark.parametrize("session", [turn_based, answered])
@pytest.mark.parametrize("end", [-1, -1.0, -500])
def test_an_unknown_item_is_not_found_whatever_its_end(session: Any, end: float) -> None:
    # realtime_events.py resolve_truncate_item looks the item up before the sign.
    got = refusal(session(), item_id="item_nope", audio_end_ms=end)
    assert got == ("item_not_found", "Conversation item not found: item_nope", "absent", "evt_cut")


@pytest.mark.parametrize("end", [-1, -1.0, -7.5])
def test_a_negative_end_of_the_assistants_item_is_vllm_omnis_bad_event(end: float) -> None:
    got = refusal(answered(), item_id=AID, audio_end_ms=end)
    assert got == (*NEGATIVE, "absent", "evt_cut")


@pytest.mark.parametrize(("end", "cut"), [(200.0, 200), (200.9, 200), (-0.5, 0), (300, 300)])
def test_any_number_is_taken_as_its_int(end: float, cut: int) -> None:
    # realtime_commands.py: audio_end_ms=int(audio_end_ms), toward zero.
    sc = answered()
    out = sc.client({"type": "conversation.item.truncate", "item_id": AID, "audio_end_ms": end})
    assert "error" not in types(out)
    [told] = [e for e in client_events(out) if e["type"] == "conversation.item.truncated"]
    assert told["audio_end_ms"] == cut and isinstance(told["audio_end_ms"], int)
    [up] = [e for e in upstream_events(out) if e["type"] == "conversation.item.truncate"]
    assert up["audio_end_ms"] == cut and isinstance(up["audio_end_ms"], int)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"audio_end_ms": -1}, ("missing_item_id", "conversation.item.truncate requires item_id")),
        (
            {"item_id": "", "audio_end_ms": 10},
            ("missing_item_id", "conversation.item.truncate requires item_id"),
        ),
        (
            {"item_id": "item_nope", "audio_end_ms": "10"},
            ("bad_event", "conversation.item.truncate requires numeric audio_end_ms"),
        ),
        (
            {"item_id": "item_nope"},
            ("bad_event", "conversation.item.truncate requires numeric audio_end_ms"),
        ),
        (
            {"item_id": AID, "audio_end_ms": 10, "content_index": 1},
            ("bad_event", "conversation.item.truncate content_index out of range: 1"),
        ),
    ],
)
def test_the_event_is_read_before_the_conversation(fields: dict, expected: tuple) -> None:  # type: ignore[type-arg]
    assert refusal(answered(), **fields)[:2] == expected


@pytest.mark.parametrize("index", [-2, 0.0, "audio", None])
def test_a_content_index_that_is_no_positive_number_is_the_first_part(index: Any) -> None:
    sc = answered()
    ev = {"type": "conversation.item.truncate", "item_id": AID, "audio_end_ms": 100}
    out = sc.client({**ev, "content_index": index})
    assert "conversation.item.truncated" in types(out) and "error" not in types(out)


def test_a_user_turn_is_not_the_assistants_to_truncate() -> None:
    # items.py validate_realtime_item_truncate: after the lookup, before the sign.
    sc = turn_based()
    sc.client({"type": "input_audio_buffer.append", "audio": pcm_b64(300, 16000)})
    out = sc.client({"type": "input_audio_buffer.commit", "final": False})
    [committed] = [e for e in client_events(out) if e["type"] == "input_audio_buffer.committed"]
    got = refusal(sc, item_id=committed["item_id"], audio_end_ms=-1)
    message = "conversation.item.truncate only supports assistant message items"
    assert got == ("bad_event", message, "absent", "evt_cut")


EXCEEDS = ("bad_event", "conversation.item.truncate audio_end_ms exceeds item audio duration")


def sent_ms(sc: Script) -> int:
    """The whole ms of ``AID``'s audio the client was sent (the item's duration)."""
    item = sc.s.ledger.get(AID)  # type: ignore[attr-defined]
    assert item is not None and item.sent_ms > 900
    return round(item.sent_ms)


@pytest.mark.parametrize(
    ("end", "sent", "refused"),
    [(42, 1000 / 24, False), (43, 1000 / 24, True), (41, 41.4, False), (42, 41.4, True)],
)
def test_the_duration_an_end_is_held_to_is_the_audio_sent_rounded_to_the_nearest_ms(
    end: int, sent: float, refused: bool
) -> None:
    # The data planes round a chunk's samples to whole ms (model_executor/models/
    # */duplex/data_plane.py): 1000 samples at 24 kHz are 42 ms, so a client rounding
    # its played position so is not refused.
    got = native_truncate.past_the_audio(end, sent)
    assert got == (EXCEEDS if refused else None)


@pytest.mark.parametrize("past", [1, 1.9, 4000])
def test_an_end_past_the_audio_sent_is_vllm_omnis_bad_event(past: float) -> None:
    # items.py validate_realtime_item_truncate: past the item's audio duration, in whole ms.
    sc = answered()
    got = refusal(sc, item_id=AID, audio_end_ms=sent_ms(sc) + past)
    assert got == (*EXCEEDS, "absent", "evt_cut")


def test_an_end_at_the_audio_sent_is_taken() -> None:
    sc = answered()
    end = sent_ms(sc) + 0.9  # int() of it: the duration itself
    out = sc.client({"type": "conversation.item.truncate", "item_id": AID, "audio_end_ms": end})
    assert "error" not in types(out)
    [up] = [e for e in upstream_events(out) if e["type"] == "conversation.item.truncate"]
    assert up["audio_end_ms"] == sent_ms(sc)


def test_an_end_past_the_audio_sent_of_a_truncated_item_is_vllm_omnis_bad_event() -> None:
    # The duration is the item's audio, whatever an earlier truncate cut.
    sc = answered()
    out = sc.client({"type": "conversation.item.truncate", "item_id": AID, "audio_end_ms": 500})
    assert "conversation.item.truncated" in types(out)
    got = refusal(sc, item_id=AID, audio_end_ms=sent_ms(sc) + 1)
    assert got == (*EXCEEDS, "absent", "evt_cut")
