"""Cancel, clear, truncate and playback acks on the duplex reference backends
(``docs/fidelity.md`` rows 1c, 1d): what each does to the answer and what it is
answered, refusals included.

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_duplex_client import TURN, after_turn

pytestmark = pytest.mark.timeout(60)


async def test_response_cancel_and_already_complete() -> None:
    async with after_turn("duplex", reply_ms=3000) as p:
        first = await p.until("response.output_audio.delta")
        await p.send({"type": "response.cancel", "response_id": "resp-other"})
        other = await p.until("error")
        assert isinstance(other["error"], dict)
        assert other["error"]["message"] == "Response is not active: resp-other"
        await p.send({"type": "response.cancel"})
        done = await p.until("response.done")
        assert isinstance(done["response"], dict)
        assert done["response"]["status_details"] == {
            "type": "cancelled",
            "reason": "client_cancelled",
        }
        await p.send({"type": "response.cancel", "event_id": "evt_x"})
        again = await p.until("error")
        assert again["error"] == {
            "type": "invalid_request_error",
            "code": "response_not_active",
            "message": f"Response is already complete: {first['response_id']}",
            "event_id": "evt_x",
        }


async def test_output_audio_buffer_clear_cancels_live_response() -> None:
    async with after_turn("duplex", reply_ms=3000) as p:
        first = await p.until("response.output_audio.delta")
        await p.send({"type": "output_audio_buffer.clear"})
        cleared = await p.until("output_audio_buffer.cleared")
        assert cleared["response_id"] == first["response_id"]
        done = await p.until("response.done")
        assert isinstance(done["response"], dict)
        assert done["response"]["status_details"] == {
            "type": "cancelled",
            "reason": "output_audio_buffer_clear",
        }


@pytest.mark.parametrize("faults", [frozenset(), frozenset({"ignore_truncate"})])
async def test_truncate_cuts_transcript_and_acknowledges(faults: frozenset[str]) -> None:
    options = ReferenceOptions(fidelity="lenient", faults=faults)
    async with after_turn("duplex", reply_ms=1000, options=options) as p:
        done = await p.until("response.done")
        rid = str(done["response_id"])
        full = p.of("response.output_audio_transcript.done")[0]["transcript"]
        await p.send(
            {
                "type": "conversation.item.truncate",
                "item_id": f"item_{rid}",
                "audio_end_ms": 300,
            }
        )
        truncated = await p.until("conversation.item.truncated")
        assert truncated["audio_end_ms"] == 300 and truncated["content_index"] == 0
        ack = await p.recv()
        assert ack["type"] == "playback.acknowledged"
        assert isinstance(ack["event"], dict) and ack["event"]["truncate"] is True
        await p.send({"type": "conversation.item.retrieve", "item_id": f"item_{rid}"})
        item = (await p.until("conversation.item.retrieved"))["item"]
        assert isinstance(item, dict) and isinstance(item["content"], list)
        kept = item["content"][0]["transcript"]
        if faults:
            assert kept == full
        else:
            assert kept and len(kept) < len(str(full)) and str(full).startswith(kept)
        await p.send(
            {
                "type": "conversation.item.truncate",
                "item_id": f"item_{rid}",
                "audio_end_ms": 99999,
            }
        )
        too_far = await p.until("error")
        assert isinstance(too_far["error"], dict)
        assert (
            too_far["error"]["message"]
            == "conversation.item.truncate audio_end_ms exceeds item audio duration"
        )
        await p.send(
            {"type": "conversation.item.truncate", "item_id": "item_nope", "audio_end_ms": 1}
        )
        missing = await p.until("error")
        assert isinstance(missing["error"], dict) and missing["error"]["code"] == "item_not_found"
        await p.send({"type": "conversation.item.truncate", "audio_end_ms": 1})
        no_id = await p.until("error")
        assert isinstance(no_id["error"], dict) and no_id["error"]["code"] == "missing_item_id"


async def test_playback_ack_errors() -> None:
    async with after_turn("duplex", reply_ms=600) as p:
        rid = str((await p.until("response.done"))["response_id"])
        await p.send(
            {"type": "playback.ack", "played_ms": 10, "response_id": rid, "item_id": "item_x"}
        )
        mismatch = await p.until("error")
        assert mismatch["error"] == {
            "type": "invalid_request_error",
            "code": "playback_item_mismatch",
            "message": "playback.ack item_id must match item_<response_id>.",
        }
        await p.send({"type": "playback.ack", "played_ms": 10, "response_id": "resp-unknown"})
        unknown = await p.until("error")
        assert (
            isinstance(unknown["error"], dict)
            and unknown["error"]["code"] == "playback_item_not_found"
        )
        await p.speak(TURN)
        await p.until("input_audio_buffer.committed")
        await p.send({"type": "playback.ack", "played_ms": 10, "response_id": rid})
        late = await p.until("error")
        assert isinstance(late["error"], dict) and late["error"]["code"] == "playback_ack_too_late"


async def test_an_ack_before_the_next_turn_keeps_later_acks_in_time() -> None:
    """vLLM-Omni's first ack of an answer reserves its place in the history; acks of
    it after the next turn is committed are then not too late
    (``engine/duplex/session/engine_session.py``, ``playback_ack_is_too_late``)."""
    async with after_turn("duplex", reply_ms=600) as p:
        rid = str((await p.until("response.done"))["response_id"])
        await p.send({"type": "playback.ack", "played_ms": 100, "response_id": rid})
        await p.until("playback.acknowledged")
        await p.speak(TURN)
        await p.until("input_audio_buffer.committed")
        await p.send({"type": "playback.ack", "played_ms": 600, "response_id": rid})
        acked = await p.until("playback.acknowledged")
        assert acked["event"]["played_ms"] == 600
        assert not [e for e in p.events if e.get("type") == "error"]


async def test_no_barge_in_truncate_is_accepted_like_the_real_runner() -> None:
    # supports_audio_truncate is false for Nemotron, but 0.30.0's runner never checks it:
    # conversation.item.truncate answers truncated + playback.acknowledged on every model.
    kind = "duplex-no-barge-in"
    async with after_turn(kind, reply_ms=480, path="/v1/duplex?model=m") as p:
        rid = str((await p.until("response.done"))["response_id"])
        await p.send(
            {"type": "conversation.item.truncate", "item_id": f"item_{rid}", "audio_end_ms": 160}
        )
        assert (await p.until("conversation.item.truncated"))["audio_end_ms"] == 160
        assert (await p.recv())["type"] == "playback.acknowledged"
