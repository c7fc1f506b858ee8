"""Camera frames over a turn-based upstream are refused, never taken and dropped.

vLLM-Omni takes an append with audio and/or ``video_frames`` (its
``protocol/realtime/audio_input.py``). A turn-based upstream hears audio only, so in
``duplex_emulated`` the frames are refused (``unsupported_by_upstream`` naming
``video_frames``) and the append's audio, if any, is taken
(``shim/dialects/turn_based.py``).
"""

from __future__ import annotations

import pybase64
import pytest

from tests.native_client_session import pcm16k
from tests.servers import (
    load_clip,
    proxied_client,
    silence,
)

pytestmark = pytest.mark.timeout(60)

# A 1x1 PNG, as a camera frame would come (base64).
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
    "AAAABJRU5ErkJggg=="
)


async def test_frames_are_refused_and_the_audio_taken() -> None:
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(300))
    async with proxied_client("turn", reply_ms=400, duplex="1", autostart="0") as c:
        opening = {"turn_detection": None, "extra_body": {"auto_response": True}}
        await c.send({"type": "session.update", "session": opening})
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "duplex_emulated"
        await c.send({"type": "input_audio_buffer.append", "video_frames": [PNG]})
        alone = (await c.until("error"))["error"]
        assert (alone["code"], alone["param"]) == ("unsupported_by_upstream", "video_frames")
        audio = pybase64.b64encode(speech).decode()
        await c.send({"type": "input_audio_buffer.append", "audio": audio, "video_frames": [PNG]})
        beside = (await c.until("error"))["error"]
        assert (beside["code"], beside["param"]) == ("unsupported_by_upstream", "video_frames")
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        done = await c.until("response.done", timeout=20)
        assert done["response"]["status"] == "completed", done  # the audio was a turn
        assert len(c.of("error")) == 2, c.of("error")
