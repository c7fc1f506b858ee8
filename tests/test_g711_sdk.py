"""G.711 clients (``audio/pcmu`` / ``audio/pcma``, 8 kHz) through the official ``openai``
SDK, in both emulated modes: the proxy decodes their appends and encodes its answer."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection
from openai.types.realtime.realtime_audio_formats import RealtimeAudioFormats
from pydantic import TypeAdapter

from proxy.reference.options import ReferenceOptions
from shim.audio import StreamResampler
from shim.g711 import ALAW, ULAW, g711_to_int16, int16_to_g711
from tests.openai_sdk_client import (
    GA_EVENTS,
    MODES,
    as_dict,
    events_until_response_done,
    first_session_created,
    refusal,
    sdk_connection,
)
from tests.openai_sdk_turns import heard_seconds
from tests.servers import load_clip, proxy, proxy_config, reference

G711_RATE = 8000
CHUNK = G711_RATE * 20 // 1000  # 20 ms appends, one byte a sample
REPLY_MS = 1200
FORMATS: TypeAdapter[Any] = TypeAdapter(RealtimeAudioFormats)
ENCODINGS = {"audio/pcmu": ULAW, "audio/pcma": ALAW}


def g711_clip(name: str, encoding: str) -> bytes:
    """A corpus clip (24 kHz PCM16) as 8 kHz G.711."""
    pcm = np.frombuffer(load_clip(name), dtype="<i2").astype(np.int16)
    down = StreamResampler(24000, G711_RATE)
    return int16_to_g711(np.concatenate([down.process(pcm), down.flush()]), encoding)


async def g711_session(conn: AsyncRealtimeConnection, wire: str) -> dict[str, Any]:
    """Push-to-talk with ``wire`` both ways; the session.updated that answers it."""
    fmt = {"type": wire}
    await conn.session.update(
        session={  # type: ignore[typeddict-item]
            "type": "realtime",
            "audio": {"input": {"format": fmt, "turn_detection": None}, "output": {"format": fmt}},
        }
    )
    return as_dict(await conn.recv())


@pytest.mark.parametrize("wire", ["audio/pcmu", "audio/pcma"])
@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_g711_turn_is_heard_answered_and_truncated(
    kind: str, mode: str, wire: str
) -> None:
    encoding = ENCODINGS[wire]
    clip = g711_clip("utt05_clean.wav", encoding)
    async with sdk_connection(kind, reply_ms=REPLY_MS) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        updated = await g711_session(conn, wire)
        assert updated["type"] == "session.updated", updated
        GA_EVENTS.validate_python(updated)
        audio = updated["session"]["audio"]
        assert audio["input"]["format"] == audio["output"]["format"] == {"type": wire}
        FORMATS.validate_python(audio["input"]["format"])
        for i in range(0, len(clip), CHUNK):
            await conn.input_audio_buffer.append(
                audio=base64.b64encode(clip[i : i + CHUNK]).decode()
            )
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        events = await events_until_response_done(conn)
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.committed" in kinds, kinds
        assert events[-1]["response"]["status"] == "completed", events[-1]
        # The upstream heard the turn for as long as it is: 1 byte is 1/8 ms.
        assert abs(heard_seconds(events) - len(clip) / G711_RATE) <= 0.15
        deltas = [e for e in events if e["type"] == "response.output_audio.delta"]
        raw = b"".join(base64.b64decode(d["delta"], validate=True) for d in deltas)
        # The answer is REPLY_MS of audio: that many 8 kHz G.711 bytes, not PCM16's.
        assert abs(len(raw) * 1000 / G711_RATE - REPLY_MS) <= 30, len(raw)
        answer = g711_to_int16(raw, encoding).astype(np.float64)
        rms = float(np.sqrt(np.mean(answer**2)))
        assert 100 < rms < 20000, rms  # a voice, neither silence nor bytes read as noise
        # Truncation is in ms of the answer: past its end is refused, near it is not.
        item_id = deltas[0]["item_id"]
        late = REPLY_MS + 300
        await conn.conversation.item.truncate(item_id=item_id, content_index=0, audio_end_ms=late)
        refused = await refusal(conn)
        assert refused["error"]["code"] == "invalid_value", refused
        end = REPLY_MS - 100
        await conn.conversation.item.truncate(item_id=item_id, content_index=0, audio_end_ms=end)
        async for event in conn:
            ev = as_dict(event)
            GA_EVENTS.validate_python(ev)
            assert ev["type"] != "error", ev
            if ev["type"] == "conversation.item.truncated":
                assert (ev["item_id"], ev["audio_end_ms"]) == (item_id, end), ev
                break


async def test_ga_passthrough_leaves_g711_to_the_upstream() -> None:
    """Relayed byte for byte, the format is the upstream's to take or refuse: vLLM-Omni
    0.30 knows G.711 as ``g711_ulaw`` only, so it refuses GA's ``audio/pcmu``."""
    strict = ReferenceOptions(fidelity="strict")
    async with reference("duplex", options=strict) as upstream:
        route = {"model": "m", "upstream": upstream, "ga_passthrough": True}
        async with proxy(proxy_config({}, routes=[route])) as base:
            port = int(base.rsplit(":", 1)[1])
            async with AsyncOpenAI(
                api_key="test", websocket_base_url=f"ws://127.0.0.1:{port}/v1"
            ) as client:
                async with client.realtime.connect(model="m") as conn:
                    created = await first_session_created(conn)
                    assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
                    fmt = {"type": "audio/pcmu"}
                    await conn.session.update(
                        session={"type": "realtime", "audio": {"input": {"format": fmt}}}  # type: ignore[typeddict-item]
                    )
                    refused = await refusal(conn)
                    assert refused["error"]["code"] == "unsupported_audio_format", refused
                    assert "audio/pcmu" in refused["error"]["message"], refused
