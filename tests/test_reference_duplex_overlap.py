"""Overlap on the duplex reference backends: speech over an answer barges in where the
profile can, is listened to and answered after where it cannot, a backchannel cuts
nothing, and an unacked answer owns the turn under ack-only ownership.

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import numpy as np
import pytest

from proxy.reference import ReferenceOptions
from tests.reference_duplex_client import OVERLAP, after_turn, pcm, session_rid_prefix
from tests.testaudio import silence, vowel

pytestmark = pytest.mark.timeout(60)


async def test_barge_in_cuts_the_response_and_takes_the_turn() -> None:
    async with after_turn("duplex", reply_ms=3000) as p:
        first = await p.until("response.output_audio.delta")
        rid = first["response_id"]
        await p.speak(OVERLAP)
        decision = await p.until("overlap.decision", where=lambda e: e["action"] == "barge_in")
        assert decision["reason"] == "server_vad_speech_started" and decision["epoch"] == 0
        done = await p.until("response.done")
        response = done["response"]
        assert isinstance(response, dict) and response["id"] == rid
        assert response["status"] == "cancelled"
        assert response["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        cut = p.types()[p.events.index(decision) :]
        assert cut[:7] == [
            "overlap.decision",
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "conversation.item.done",
            "response.done",
        ]
        assert (await p.recv())["type"] == "rate_limits.updated"
        assert (await p.recv())["type"] == "input_audio_buffer.speech_started"
        second = await p.until("response.created")
        assert str(second["response_id"]).startswith(f"resp-{session_rid_prefix(p)}-1-")
        after_cut = p.events[p.events.index(done) :]
        assert not [
            e
            for e in after_cut
            if e["type"] == "response.output_audio.delta" and e["response_id"] == rid
        ]
        listens = [e for e in p.of("overlap.decision") if e["action"] == "listen"]
        assert all(e["reason"] == "accumulating_overlap_speech" for e in listens)


async def test_no_barge_in_listens_keeps_talking_then_answers_the_overlap() -> None:
    kind = "duplex-no-barge-in"
    async with after_turn(kind, reply_ms=2000) as p:
        first = await p.until("response.output_audio.delta")
        rid = first["response_id"]
        await p.speak(OVERLAP)
        decision = await p.until("overlap.decision")
        assert decision["action"] == "listen" and decision["reason"] == "barge_in_unsupported"
        committed = await p.until("input_audio_buffer.committed")
        details = committed["event"]
        assert isinstance(details, dict) and details["overlap_deferred"] is True
        done = await p.until("response.done")
        assert done["response_id"] == rid
        response = done["response"]
        assert isinstance(response, dict) and response["status"] == "completed"
        played = sum(
            pcm(d).size for d in p.of("response.output_audio.delta") if d["response_id"] == rid
        )
        assert abs(played - 2 * 22050) <= 1764
        assert not [e for e in p.of("overlap.decision") if e["action"] == "barge_in"]
        second = await p.until("response.created")
        assert second["response_id"] != rid
        await p.send({"type": "barge_in"})
        refused = await p.until("error")
        assert (
            isinstance(refused["error"], dict)
            and refused["error"]["code"] == "barge_in_unsupported"
        )


async def test_backchannel_below_overlap_threshold_does_not_cut() -> None:
    async with after_turn("duplex", reply_ms=2000) as p:
        await p.until("response.output_audio.delta")
        await p.speak(np.concatenate([vowel(220), silence(700)]))
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "completed"
        assert not [e for e in p.of("overlap.decision") if e["action"] == "barge_in"]


async def test_ack_only_ownership_defers_and_refuses_create() -> None:
    options = ReferenceOptions(fidelity="lenient", strict_ack_ownership=True)
    async with after_turn("duplex", reply_ms=600, options=options) as p:
        done = await p.until("response.done")
        rid = str(done["response_id"])
        # Nothing acked: the assistant still owns the turn (sent_ms > committed_ms).
        await p.send({"type": "response.create"})
        refused = await p.until("error")
        assert isinstance(refused["error"], dict)
        assert refused["error"]["code"] == "response_already_active"
        await p.send({"type": "playback.ack", "played_ms": 600, "response_id": rid})
        ack = await p.until("playback.acknowledged")
        event = ack["event"]
        assert isinstance(event, dict) and event["item_id"] == f"item_{rid}"
        assert event["playback"] == {
            "generated_ms": 600,
            "sent_ms": 600,
            "played_ms": 600,
            "committed_ms": 600,
        }
        await p.send({"type": "response.create"})
        missing = await p.until("error")
        assert isinstance(missing["error"], dict)
        assert missing["error"]["code"] == "response_create_without_input"
