"""vLLM-Omni's own ``DuplexClient`` (from the 0.30.0 wheel) against the strict duplex stand-in.

No proxy in between: if the stand-in speaks the real protocol, the real
client holds a spoken conversation with it -- ``session.update`` handshake with
``autostart=0``, appends, ``commit{final: true}`` answered through
``extra_body.auto_response``, audio demultiplexed per response, playback acks
that hand the turn back, ``session.event_ack`` for every journaled event, and
``session.close``.  The wheel is fetched with pip on first use and cached by
pytest (``tests/vllm_omni_client.py``).
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import numpy as np
import pytest

from proxy.reference import ReferenceOptions, running_reference_backend
from tests.testaudio import silence, vowel

pytestmark = pytest.mark.timeout(300)


def _pcm16(samples: np.ndarray) -> bytes:
    return samples.astype("<i2").tobytes()


async def _one_turn(client: Any, speech: bytes) -> Any:
    """Speak, commit, play the answer (acking as it plays); returns the response handle."""
    await client.stream_pcm(speech, realtime=False)
    await client.commit()
    async for response in client.responses():
        if response.decision == "listen":
            continue
        async for _chunk in response.audio():
            await client.ack_playback(response.played_ms, response_id=response.response_id)
        await response.wait(timeout_s=30)
        return response
    raise AssertionError("the session ended before an answer")


@pytest.mark.parametrize(
    ("profile", "extra"),
    [("generic", {}), ("minicpmo", {"ref_audio": "data:audio/wav;base64,UklGRg=="})],
)
async def test_vllm_omni_duplex_client_holds_a_conversation(
    duplex_client_module: types.ModuleType, profile: str, extra: dict[str, object]
) -> None:
    duplex = duplex_client_module
    options = ReferenceOptions(fidelity="strict", profile=profile)
    speech = _pcm16(np.concatenate([vowel(1200), silence(300)]))
    async with running_reference_backend("duplex", reply_ms=1000, options=options) as base:
        config = duplex.SessionConfig(**extra)
        url = base.replace("http://", "ws://")
        async with duplex.DuplexClient(url, model="m", config=config) as client:
            assert client.session_id and client.resume_token
            assert client.session_info["playback_commit_policy"] == "ack_only"
            assert client.session_info["overlap_policy"] == "listen_only"
            first = await _one_turn(client, speech)
            assert first.decision == "speak"
            assert first.transcript
            assert first.done_event.type == "response.done"
            assert first.done_event.raw["response"]["status"] == "completed"
            # Fully acked, so the turn is free: the next commit is answered too.
            second = await _one_turn(client, speech)
            assert second.response_id != first.response_id
            assert second.played_ms == pytest.approx(first.played_ms, abs=50)


async def test_vllm_omni_duplex_client_that_never_acks_is_not_answered_again(
    duplex_client_module: types.ModuleType,
) -> None:
    """Ack-owned playback: unacked audio keeps the answer in progress, so the next turn waits."""
    duplex = duplex_client_module
    options = ReferenceOptions(fidelity="strict")
    speech = _pcm16(np.concatenate([vowel(1200), silence(300)]))
    async with running_reference_backend("duplex", reply_ms=1000, options=options) as base:
        url = base.replace("http://", "ws://")
        async with duplex.DuplexClient(url, model="m") as client:
            await client.stream_pcm(speech, realtime=False)
            await client.commit()
            async for response in client.responses():
                async for _chunk in response.audio():
                    pass  # played, never acked
                await response.wait(timeout_s=30)
                break
            await client.stream_pcm(speech, realtime=False)
            # The stand-in handles events in order, so the heartbeat's answer comes after
            # everything the commit caused: a response.created would arrive first.
            first = asyncio.create_task(
                client.wait_for("response.created", "session.heartbeat_ack", timeout_s=30)
            )
            await asyncio.sleep(0)
            await client.commit()
            await client.send({"type": "session.heartbeat"})
            assert (await first).type == "session.heartbeat_ack"
            answered = asyncio.create_task(client.wait_for("response.created", timeout_s=30))
            await asyncio.sleep(0)
            await client.ack_playback(response.played_ms, response_id=response.response_id)
            assert (await answered).response_id != response.response_id
