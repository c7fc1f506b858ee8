"""GA's ``response.create`` answers every user turn committed since the last response
with one response, through the ``openai`` SDK.

A client that commits turns and asks for the answer itself (push-to-talk, or server
VAD with ``create_response: false``) gets one response per ``response.create``, never
one it did not ask for. Over a turn-based upstream, which takes one audio turn per
answer, the proxy sends the turns up as one (``shim/dialects/turn_answer.py``).
A duplex upstream answers the last committed turn, the earlier ones being its
conversation: vLLM-Omni decides that, and its stand-in counts only that turn as heard.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.openai_sdk_client import (
    RATE,
    append_audio,
    assert_completed_with_audio,
    events_for,
    events_until_response_done,
    first_session_created,
    pcm_session,
    sdk_connection,
    until,
)
from tests.openai_sdk_turns import heard_seconds, speech_seconds
from tests.servers import load_clip, silence

FIRST, SECOND = load_clip("utt04_clean.wav"), load_clip("utt05_clean.wav")


def seconds(pcm: bytes) -> float:
    return len(pcm) / (2 * RATE)


def responses(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] == "response.created"]


async def one_answer_to_both(conn: Any) -> list[dict[str, Any]]:
    """``response.create``; its events to ``response.done``, then nothing more is
    answered."""
    await conn.response.create(event_id="evt_answer")
    answer = await events_until_response_done(conn)
    assert len(responses(answer)) == 1, [e["type"] for e in answer]
    assert_completed_with_audio(answer)
    later = await events_for(conn, 2.0)
    assert responses(later) == [], [e["type"] for e in later]
    return answer


@pytest.mark.parametrize("kind", ["turn"])
async def test_two_pressed_turns_then_one_create_get_one_answer_to_both(kind: str) -> None:
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await conn.session.update(session=pcm_session(turn_detection=None))
        await until(conn, "session.updated")
        for clip in (FIRST, SECOND):
            await append_audio(conn, clip)
            await conn.input_audio_buffer.commit()
            await until(conn, "conversation.item.done")
        answer = await one_answer_to_both(conn)
        assert abs(heard_seconds(answer) - seconds(FIRST + SECOND)) <= 0.15


@pytest.mark.parametrize("kind", ["turn"])
async def test_two_turns_under_vad_without_create_response_get_one_answer(kind: str) -> None:
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        vad = {"type": "server_vad", "create_response": False}
        await conn.session.update(session=pcm_session(turn_detection=vad))
        await until(conn, "session.updated")
        for clip in (FIRST, SECOND):
            await append_audio(conn, clip + silence(1200))
            await until(conn, "conversation.item.done")
        answer = await one_answer_to_both(conn)
        spoken = speech_seconds("utt04_clean.wav") + speech_seconds("utt05_clean.wav")
        assert heard_seconds(answer) >= spoken
