"""Barge-in on the strict stand-ins, like vLLM-Omni 0.30.0 (``docs/fidelity.md`` rows
1b, 4, 5, 15): listen-only unless server VAD, which cuts even a finished unacked
answer, the reasons a cut answer gives, and ``playback.ack{truncate}`` cutting nothing.

Each test runs a real reference backend over a real WebSocket; "nothing happened" is
shown with the sentinel ``Peer.settle`` (``tests/reference_strict_client.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.reference_strict_client import QUIET, SERVER_VAD, SPEECH, answered, backend, session

pytestmark = pytest.mark.timeout(60)


async def test_listen_only_by_default_overlap_never_cuts() -> None:
    async with backend(reply_ms=3000) as (http, url), session(http, url) as (p, created):
        sess = created["session"]
        assert isinstance(sess, dict)
        assert sess["overlap_policy"] == "listen_only"
        assert sess["capabilities"]["supports_barge_in"] is True  # can, but will not
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.until("response.output_audio.delta")
        await p.speak(SPEECH)  # talking over the answer
        done = await p.until("response.done")
        assert done["response"]["status"] == "completed"  # type: ignore[index]
        assert done["response"]["status_details"]["reason"] == "stop"  # type: ignore[index]
        assert {d["action"] for d in p.of("overlap.decision")} == {"listen"}


async def test_server_vad_barges_in_even_on_a_finished_unacked_answer() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, c):
        assert c["session"]["overlap_policy"] == "barge_in_on_speech"  # type: ignore[index]
        await p.speak(np.concatenate([SPEECH, QUIET]))
        first = await answered(p)
        assert first["response"]["status"] == "completed"  # type: ignore[index]
        await p.speak(np.concatenate([SPEECH, QUIET]))
        cleared = await p.until("output_audio_buffer.cleared")
        assert cleared["response_id"] == first["response_id"]
        barge = [d for d in p.of("overlap.decision") if d["action"] == "barge_in"]
        assert barge and barge[0]["reason"] == "server_vad_speech_started"
        await answered(p)  # the new speech is the next turn


async def test_server_vad_barge_in_cancels_a_live_answer() -> None:
    async with (
        backend(reply_ms=4000) as (http, url),
        session(http, url, turn_detection=SERVER_VAD) as (p, _),
    ):
        await p.speak(np.concatenate([SPEECH, QUIET]))
        await p.until("response.output_audio.delta")
        await p.speak(SPEECH)
        done = await p.until("response.done")
        response = done["response"]
        assert isinstance(response, dict)
        assert response["status"] == "cancelled"
        assert response["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert response["output"][0]["status"] == "cancelled"


async def test_client_barge_in_reason_and_cancelled_item() -> None:
    async with backend(reply_ms=4000) as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.until("response.output_audio.delta")
        await p.send({"type": "barge_in"})
        done = await p.until("response.done")
        assert done["response"]["status_details"]["reason"] == "barge_in"  # type: ignore[index]
        assert done["response"]["output"][0]["status"] == "cancelled"  # type: ignore[index]


async def test_playback_ack_truncate_is_dropped() -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        done = await answered(p)
        rid = done["response_id"]
        full = done["response"]["output"][0]["content"][0]["transcript"]  # type: ignore[index]
        await p.send(
            {"type": "playback.ack", "played_ms": 100, "response_id": rid, "truncate": True}
        )
        ack = await p.until("playback.acknowledged")
        assert ack["event"]["truncate"] is False  # type: ignore[index]
        await p.send({"type": "conversation.item.retrieve", "item_id": f"item_{rid}"})
        item = (await p.until("conversation.item.retrieved"))["item"]
        assert item["content"][0]["transcript"] == full  # type: ignore[index]
