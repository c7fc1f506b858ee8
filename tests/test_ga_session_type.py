"""A GA ``session.update`` asking for a transcription session, through the ``openai`` SDK.

GA's ``type: "transcription"`` session transcribes the input and answers nothing; no
mode here can serve that (every session answers its turns), so the update is refused
with a coded error naming ``session.type`` and the client's event, and changes nothing
(``shim/session_options.py``). Every event is checked against the SDK's GA types.
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
    sdk_connection,
    until,
)
from tests.servers import load_clip, silence


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_transcription_session_is_refused_and_the_session_still_answers(
    kind: str, mode: str
) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(
            session={"type": "transcription", "audio": {"input": {"turn_detection": None}}},
            event_id="evt_transcribe",
        )
        events = await until(conn, "error")
        events += await events_for(conn, 1.0)
        kinds = [e["type"] for e in events]
        assert "session.updated" not in kinds, kinds
        [error] = [e["error"] for e in events if e["type"] == "error"]
        assert error["code"] == "unsupported_by_upstream", error
        assert error["param"] == "session.type", error
        assert error["event_id"] == "evt_transcribe", error
        # Nothing of it applied: server VAD still ends the turn, and it is answered.
        await append_audio(conn, load_clip("utt05_clean.wav") + silence(1000))
        answer = await events_until_response_done(conn)
        assert "input_audio_buffer.speech_stopped" in [e["type"] for e in answer]
        assert_completed_with_audio(answer)
