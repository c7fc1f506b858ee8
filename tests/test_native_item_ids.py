"""An answer's item is ``item_<response_id>`` in every mode, as vLLM-Omni names it.

vLLM-Omni 0.30.0 names a response's assistant item after the response and checks a
``playback.ack``'s ``item_id`` against that name; its client's
``acknowledge_collected_playback`` acks every collected response by it. The proxy's
own answers (``duplex_emulated``) are named the same way (``shim/dialects/turn_answer.py``),
so the wheel's helper is acknowledged there too, and the next turn is answered.
"""

from __future__ import annotations

import asyncio
import types

import pytest

from tests.native_client_session import pcm16k
from tests.servers import load_clip, silence
from tests.vllm_client_through_proxy import IDS, MODES, through_proxy

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_the_wheels_collected_playback_ack_is_acknowledged(
    duplex_client_module: types.ModuleType, kind: str, mode: str
) -> None:
    duplex = duplex_client_module
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(500))
    async with through_proxy(kind, reply_ms=800) as base:
        client = duplex.DuplexClient(base, model="m", heartbeat_interval_s=None, reconnect=None)
        collector = duplex.EventCollector()
        async with client:
            assert client.session_info["capabilities"]["proxy"]["mode"] == mode
            consuming = asyncio.create_task(collector.consume(client))
            try:
                await client.stream_pcm(speech, realtime=False)
                await client.commit()
                async with asyncio.timeout(30):
                    async for response in client.responses():
                        await response.wait(30)
                        break
                added = [e for e in collector.events if e["type"] == "response.output_item.added"]
                assert added[0]["item"]["id"] == f"item_{response.response_id}", added[0]
                await duplex.acknowledge_collected_playback(client, collector)
                for _ in range(200):  # the answer to the ack, within 10 s
                    if [e for e in collector.events if e["type"] == "playback.acknowledged"]:
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError(f"no playback.acknowledged: {collector.errors()}")
                assert not collector.errors(), collector.errors()
                await client.stream_pcm(speech, realtime=False)
                await client.commit()
                async with asyncio.timeout(30):
                    async for following in client.responses():
                        assert following.response_id != response.response_id
                        break
            finally:
                consuming.cancel()
