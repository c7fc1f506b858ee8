"""The turns a test speaks through the ``openai`` SDK, and how much of one was heard.

Push-to-talk on and a turn pressed whole, speech sent at a microphone's pace, an
answer left playing; ``heard_seconds`` reads how much of the turn the reference
backend got, ``speech_seconds`` how much speech a corpus clip holds.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from typing import Any

from openai.resources.realtime.realtime import AsyncRealtimeConnection

from tests.corpus import CORPUS
from tests.openai_sdk_client import (
    CHUNK_MS,
    RATE,
    append_audio,
    as_dict,
    first_session_created,
    pcm_session,
    until,
)
from tests.servers import load_clip, silence


async def push_to_talk(conn: AsyncRealtimeConnection) -> dict[str, Any]:
    """Server VAD off; the session.updated that answers it."""
    await conn.session.update(session=pcm_session(turn_detection=None))
    return as_dict(await conn.recv())


async def pressed_turn(conn: AsyncRealtimeConnection, clip: str = "utt04_clean.wav") -> None:
    """Push-to-talk on, then one turn pressed whole: appended, committed, answer asked."""
    assert (await push_to_talk(conn))["type"] == "session.updated"
    await append_audio(conn, load_clip(clip))
    await conn.input_audio_buffer.commit()
    await conn.response.create()


def heard_seconds(events: list[dict[str, Any]]) -> float:
    """How much of the turn the reference backend got (its answer's transcript says)."""
    [done] = [e for e in events if e["type"] == "response.output_audio_transcript.done"]
    found = re.search(r"I heard about ([0-9.]+) seconds", done["transcript"])
    assert found, done["transcript"]
    return float(found.group(1))


async def speak(conn: AsyncRealtimeConnection, pcm: bytes) -> None:
    """``pcm`` as a microphone sends it: in real time."""
    step = RATE * 2 * CHUNK_MS // 1000
    for i in range(0, len(pcm), step):
        await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + step]).decode())
        await asyncio.sleep(CHUNK_MS / 1000)


def speech_seconds(name: str) -> float:
    """From the first labelled speech of a corpus clip to its last (its manifest)."""
    clips = json.loads((CORPUS / "manifest.json").read_text())["clips"]
    [spans] = [c["speech_ms"] for c in clips if c["file"] == name]
    return float(spans[-1][1] - spans[0][0]) / 1000


async def speak_at_pace(conn: AsyncRealtimeConnection, pcm: bytes, chunk_ms: int = 40) -> None:
    step = 24000 * 2 * chunk_ms // 1000
    for i in range(0, len(pcm), step):
        await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + step]).decode())
        await asyncio.sleep(chunk_ms / 1000)


async def answer_playing(conn: AsyncRealtimeConnection) -> list[dict[str, Any]]:
    """Server VAD on, a spoken turn, and its answer a second into playing: the events."""
    await first_session_created(conn)
    await conn.session.update(session=pcm_session())
    await until(conn, "session.updated")
    talk = asyncio.create_task(speak_at_pace(conn, load_clip("utt05_clean.wav") + silence(900)))
    events = await until(conn, "response.output_audio.delta")
    await talk
    await asyncio.sleep(1.0)
    return events
