"""PersonaPlex end to end: the ``openai`` SDK through the proxy to the strict PersonaPlex
stand-in, with the route's ``session_defaults`` from the shipped ``config.toml``
example, a spoken corpus turn at 24 kHz in 100 ms appends, pressed or under server
VAD: the model gets all of it as ``pcm_f32le`` at 24 kHz, in whole units.
"""

from __future__ import annotations

import asyncio
import base64
import json
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from openai import AsyncOpenAI

from proxy.config import config_from_dict
from proxy.reference.personaplex_frames import UNIT_SAMPLES
from tests.openai_sdk_client import pcm_session
from tests.personaplex_standin import standin
from tests.servers import ROOT, load_clip, proxy, silence

pytestmark = pytest.mark.timeout(120)


def shipped_personaplex_defaults() -> dict[str, Any]:
    """The PersonaPlex route's ``session_defaults`` from the shipped config.toml example."""
    text = (ROOT / "config.toml").read_text()
    examples = text[text.index("# Examples for real deployments") :].splitlines()[1:]
    uncommented = [line.removeprefix("# ") for line in examples if line.startswith("# ")]
    routes = tomllib.loads("\n".join(uncommented))["routes"]
    (route,) = [r for r in routes if r["model"] == "personaplex"]
    defaults: dict[str, Any] = route["session_defaults"]
    return defaults


@asynccontextmanager
async def ga_client(upstream: str, defaults: dict[str, Any]) -> AsyncIterator[Any]:
    """The ``openai`` SDK's realtime connection through a proxy whose one route leads to
    ``upstream`` with the shipped example's ``session_defaults``."""
    route = {"model": "m", "upstream": upstream, "session_defaults": defaults}
    config = config_from_dict({"routes": [route], "auth": {"mode": "none"}})
    async with proxy(config) as base:
        port = int(base.rsplit(":", 1)[1])
        client = AsyncOpenAI(api_key="test", websocket_base_url=f"ws://127.0.0.1:{port}/v1")
        async with client, client.realtime.connect(model="m") as conn:
            yield conn


async def test_ga_client_turn_reaches_personaplex_whole(tmp_path: Path) -> None:
    defaults = shipped_personaplex_defaults()
    speech = silence(600) + load_clip("utt00_clean.wav") + silence(300)
    sent_samples = len(speech) // 2
    async with standin(reply_ms=600) as (upstream, inputs):
        async with ga_client(upstream, defaults) as conn:
            events: list[dict[str, Any]] = [json.loads(await conn.recv_bytes())]
            assert events[0]["type"] == "session.created"
            # Push-to-talk: the client ends its turn itself.
            await conn.session.update(session=pcm_session(turn_detection=None))
            step = 2400 * 2  # 100 ms of 24 kHz PCM16: not a whole number of units
            for i in range(0, len(speech), step):
                chunk = base64.b64encode(speech[i : i + step]).decode()
                await conn.input_audio_buffer.append(audio=chunk)
                await asyncio.sleep(0.02)
            await conn.input_audio_buffer.commit()
            async with asyncio.timeout(30):
                while events[-1]["type"] != "input_audio_buffer.committed":
                    events.append(json.loads(await conn.recv_bytes()))
        assert not [e for e in events if e["type"] == "error"], events
    (frames,) = inputs
    # All of it reached the model's buffer as 24 kHz float (the last part of a unit
    # ahead of the commit), one unit per append at most.
    assert frames.appended_samples == sent_samples
    assert frames.longest_append == UNIT_SAMPLES
    # ... and the model took all of it, in whole units (the commit's padded out).
    assert frames.pending_samples == 0
    assert frames.delivered_samples == frames.appended_samples
    assert frames.unit_sizes == {UNIT_SAMPLES}


async def test_ga_client_with_server_vad_sends_personaplex_whole_units() -> None:
    defaults = shipped_personaplex_defaults()
    spoken = silence(600) + load_clip("utt02_clean.wav")
    async with standin(reply_ms=600) as (upstream, inputs):
        async with ga_client(upstream, defaults) as conn:
            events: list[dict[str, Any]] = [json.loads(await conn.recv_bytes())]
            await conn.session.update(session=pcm_session())
            step = 2400 * 2  # 100 ms appends, at the pace of speech
            speech = spoken + silence(1500)
            for i in range(0, len(speech), step):
                chunk = base64.b64encode(speech[i : i + step]).decode()
                await conn.input_audio_buffer.append(audio=chunk)
                await asyncio.sleep(0.1)
            async with asyncio.timeout(30):
                while events[-1]["type"] != "response.done":
                    events.append(json.loads(await conn.recv_bytes()))
        assert not [e for e in events if e["type"] == "error"], events
    (frames,) = inputs
    # Everything up to the end of the speech came before the answer, so it all went up
    # (all but what the proxy holds of an unfinished unit), one whole unit per append.
    assert frames.appended_samples >= len(spoken) // 2 - UNIT_SAMPLES
    assert frames.longest_append == UNIT_SAMPLES
    assert frames.pending_samples == 0 and frames.delivered_samples == frames.appended_samples
    assert frames.unit_sizes == {UNIT_SAMPLES}
