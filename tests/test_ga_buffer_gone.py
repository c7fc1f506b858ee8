"""Input a GA client has cleared or committed is gone, also when it was sent faster
than real time, through the ``openai`` SDK under server VAD, in every mode.

The proxy's VAD judges fast input late; speech it finds in input the client cleared
or committed meanwhile must not become a turn of its own (``shim/dialects/turn_based.py``,
``on_vad``). Every event is checked against the SDK's GA types.
"""

from __future__ import annotations

import pytest

from tests.openai_sdk_client import (
    MODES,
    append_audio,
    assert_completed_with_audio,
    events_for,
    events_until_response_done,
    first_session_created,
    pcm_session,
    sdk_connection,
    until,
)
from tests.servers import load_clip, silence

SPEECH = load_clip("utt04_clean.wav")[: 24000 * 2 * 2]  # its first 2 s: speech from 0.71 s


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_cleared_speech_is_no_turn(kind: str, mode: str) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session())
        await until(conn, "session.updated")
        await append_audio(conn, SPEECH)
        await conn.input_audio_buffer.clear()
        await append_audio(conn, silence(2000))
        events = await events_for(conn, 3.0)
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.cleared" in kinds, kinds
        assert "input_audio_buffer.committed" not in kinds, kinds
        assert "response.created" not in kinds, kinds
        # The session still takes a turn.
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1200))
        assert_completed_with_audio(await events_until_response_done(conn))


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_speech_committed_by_the_client_starts_no_turn_after_its_commit(
    kind: str, mode: str
) -> None:
    """GA: a commit under server VAD commits the buffer (and creates no response);
    no ``speech_started`` follows for the audio it took."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        await conn.session.update(session=pcm_session())
        await until(conn, "session.updated")
        await append_audio(conn, SPEECH)
        await conn.input_audio_buffer.commit()
        events = await until(conn, "input_audio_buffer.committed")
        events += await events_for(conn, 3.0)
        kinds = [e["type"] for e in events]
        after = kinds[kinds.index("input_audio_buffer.committed") :]
        assert "input_audio_buffer.speech_started" not in after, kinds
        assert "response.created" not in kinds, kinds
