"""The official ``openai`` SDK (GA realtime) against the proxy, in every mode.

A GA client waits for ``session.created`` before it sends anything, and the SDK
parses server events into its generated types (leniently: unknown types and extra
fields survive). These tests drive the SDK exactly as an application would: spoken
and pressed turns, and turns over an answer still playing. The SDK connection and its
readers: tests/openai_sdk_client.py; the turns: tests/openai_sdk_turns.py.
"""

from __future__ import annotations

import pytest

from tests.openai_sdk_client import (
    MODES,
    RATE,
    append_audio,
    assert_completed_with_audio,
    events_until_answered,
    events_until_response_done,
    first_session_created,
    pcm_session,
    refusal,
    sdk_connection,
    until_answer_streams,
)
from tests.openai_sdk_turns import (
    heard_seconds,
    pressed_turn,
    push_to_talk,
    speak,
    speech_seconds,
)
from tests.servers import load_clip, silence


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_spoken_turn_with_server_vad(kind: str, mode: str) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session())
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1000))
        events = await events_until_response_done(conn)
        kinds = [e["type"] for e in events]
        assert "session.updated" in kinds
        assert_completed_with_audio(events)


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_push_to_talk(kind: str, mode: str) -> None:
    """Server VAD off: the client commits its turn and asks for the response itself."""
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        updated = await push_to_talk(conn)
        assert updated["type"] == "session.updated", updated
        assert updated["session"]["audio"]["input"]["turn_detection"] is None
        # With VAD off a trailing silence must not end the turn on its own.
        await append_audio(conn, load_clip("utt04_clean.wav") + silence(1000))
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        events = await events_until_response_done(conn)
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.speech_started" not in kinds, "no server VAD events"
        assert "input_audio_buffer.committed" in kinds
        assert kinds.count("response.created") == 1
        assert kinds.index("input_audio_buffer.committed") < kinds.index("response.created")
        assert_completed_with_audio(events)


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_push_to_talk_while_the_answer_still_plays(kind: str, mode: str) -> None:
    """The next turn pressed while the answer still plays, the client neither cancelling
    nor truncating it: the whole turn is committed and answered (a duplex upstream only
    acknowledges a commit while its answer is unacknowledged, docs/fidelity.md row 1a)."""
    clip = load_clip("utt05_clean.wav")
    async with sdk_connection(kind, reply_ms=3000) as conn:
        await first_session_created(conn)
        await pressed_turn(conn)
        assert_completed_with_audio(await events_until_response_done(conn))
        # At once: 3 s of answer are still to play on the client.
        await append_audio(conn, clip)
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        second = await events_until_response_done(conn)
        assert "input_audio_buffer.committed" in [e["type"] for e in second]
        assert_completed_with_audio(second)
        assert abs(heard_seconds(second) - len(clip) / (2 * RATE)) <= 0.15


# The turn pressed over the answer: while the upstream still generates it, the client
# cancels it and truncates it where its playback stopped (the common GA flow), or just
# talks over it; once it is generated (so no response is active for the client) and
# still plays, the client truncates it, or cancels it too late (refused, as OpenAI
# refuses it) and truncates it.
PTT_FLOWS = ["cancel", "talk-over", "truncate", "late-cancel"]
# ~0.9 s and ~3.2 s: a duplex upstream that hears a turn over an answer in progress
# drops a short one as an interjection (docs/fidelity.md row 1a).
PTT_TURNS = [("short", 900), ("long", None)]


@pytest.mark.parametrize(("kind", "mode"), MODES[:2])
@pytest.mark.parametrize(("length", "cut_ms"), PTT_TURNS)
@pytest.mark.parametrize("flow", PTT_FLOWS)
async def test_sdk_push_to_talk_over_an_answer(
    kind: str, mode: str, length: str, cut_ms: int | None, flow: str
) -> None:
    """The whole turn reaches the upstream and is answered, whatever the answer was
    doing when the button was pressed; the client sees GA events only, no error."""
    clip = load_clip("utt05_clean.wav")
    if cut_ms is not None:
        clip = clip[: RATE * 2 * cut_ms // 1000]
    async with sdk_connection(kind, reply_ms=3000) as conn:
        await first_session_created(conn)
        await pressed_turn(conn)
        delta = await until_answer_streams(conn)
        if flow == "cancel":
            await conn.response.cancel()
        if flow in ("truncate", "late-cancel"):
            assert_completed_with_audio(await events_until_response_done(conn))
        if flow == "late-cancel":
            await conn.response.cancel()
            refused = await refusal(conn)
            assert refused["error"]["code"] == "response_cancel_not_active", refused
        if flow != "talk-over":
            await conn.conversation.item.truncate(
                item_id=delta["item_id"], content_index=0, audio_end_ms=100
            )
        await append_audio(conn, clip)
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        events = await events_until_answered(conn, delta["response_id"])
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.committed" in kinds, kinds
        assert_completed_with_audio(events)
        last = max(n for n, e in enumerate(events) if e["type"] == "response.created")
        assert abs(heard_seconds(events[last:]) - len(clip) / (2 * RATE)) <= 0.15, kinds


TOLD = ("speech_started", "speech_stopped", "committed")


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_sdk_speech_over_an_answer_not_interrupting(kind: str, mode: str) -> None:
    """GA ``interrupt_response: false``: speech wholly over the answer, spoken in real
    time, does not cut it, but is still the user's turn, answered once it is done."""
    clip = load_clip("utt05_clean.wav")
    vad = {"type": "server_vad", "interrupt_response": False}
    async with sdk_connection(kind, reply_ms=8000) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session(turn_detection=vad))
        await append_audio(conn, load_clip("utt04_clean.wav") + silence(1000))
        first = await until_answer_streams(conn)
        await speak(conn, silence(300) + clip + silence(1000))
        events = await events_until_answered(conn, first["response_id"])
        kinds = [e["type"] for e in events]
        short = str([k for k in kinds if "delta" not in k])
        done = kinds.index("response.done")
        assert events[done]["response"]["id"] == first["response_id"], short
        assert events[done]["response"]["status"] == "completed", short
        assert "conversation.item.truncated" not in kinds, short
        # The user's turn told as GA tells it (during the answer or after it), answered
        # only after the answer is done.
        told = [kinds.index(f"input_audio_buffer.{name}") for name in TOLD]
        assert told == sorted(told), short
        assert "response.created" in kinds[done:], short
        assert_completed_with_audio(events)
        # The upstream heard the whole turn: all its labelled speech.
        assert heard_seconds(events[done:]) >= speech_seconds("utt05_clean.wav"), short
