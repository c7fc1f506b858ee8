"""A client's microphone at real-time pace, as a browser streams it: a clip then silence in
20 ms appends, another clip laid over it on cue, and a question then a clip spoken over the
answer (the barge-in end-to-end tests and those that reuse their talk)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

from tests.servers import Client, load_clip

CHUNK = 24000 * 2 * 20 // 1000  # 20 ms of PCM16 at 24 kHz


async def mic(c: Client, pcm: bytes, state: dict[str, object]) -> None:
    """Stream ``pcm`` then silence at real-time pace until told to stop."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    n = 0
    while not state.get("stop"):
        chunk = pcm[n * CHUNK : (n + 1) * CHUNK]
        extra = state.get("overlay")
        if isinstance(extra, bytes) and extra:
            chunk, state["overlay"] = extra[:CHUNK], extra[CHUNK:]
        chunk = chunk.ljust(CHUNK, b"\0")
        await c.send(
            {"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()}
        )
        n += 1
        await asyncio.sleep(max(0.0, t0 + n * 0.02 - loop.time()))


async def speak_over_the_answer(c: Client, clip: str) -> dict[str, Any]:
    """A question into ``c``'s microphone, then ``clip`` over the answer (0.8 s into it);
    the answer's ``response.done``, once what follows it in the same instant arrived."""
    state: dict[str, object] = {}
    task = asyncio.create_task(mic(c, load_clip("utt00_clean.wav"), state))
    try:
        first = await c.until("response.output_audio.delta", timeout=20)
        await asyncio.sleep(0.8)  # into the answer
        state["overlay"] = load_clip(clip)
        while True:
            ev = await c.recv(timeout=15)
            if ev["type"] == "response.done" and ev["response"]["id"] == first["response_id"]:
                break
        # What follows the end in the same instant (conversation.item.truncated).
        with contextlib.suppress(TimeoutError):
            while True:
                await c.recv(timeout=0.3)
    finally:
        state["stop"] = True
        await task
    return ev
