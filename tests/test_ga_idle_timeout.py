"""GA server VAD's ``idle_timeout_ms`` through the proxy, with the ``openai`` SDK.

In ``duplex_emulated`` the proxy takes the turns, so it keeps the timeout: once the
answer has played out and the user has said nothing for that long, the client gets
``input_audio_buffer.timeout_triggered``, the silent turn committed and an answer, as
GA does. The client here sends nothing after its turn, so only the session's own
deadline (``proxy/emulated/ticker.py``, ``due``) can wake it: the timeout is longer
than the ticks that follow the last event. Where the upstream takes the turns
(``barge_in_emulated``) the proxy does not fake it: it is told back null.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.realtime import InputAudioBufferTimeoutTriggered

from tests.openai_sdk_client import (
    MODES,
    append_audio,
    assert_completed_with_audio,
    events_until_response_done,
    first_session_created,
    pcm_session,
    sdk_connection,
    until,
)
from tests.servers import load_clip, silence

# Past the ticks that follow the last upstream event (``MIN_KEEP_MS``, 5 s).
IDLE_MS = 6500


def told_idle(events: list[dict[str, Any]]) -> Any:
    [updated] = [e for e in events if e["type"] == "session.updated"]
    return updated["session"]["audio"]["input"]["turn_detection"]["idle_timeout_ms"]


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_idle_timeout_is_kept_where_the_proxy_takes_the_turns(kind: str, mode: str) -> None:
    async with sdk_connection(kind, reply_ms=800) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        vad = {"type": "server_vad", "idle_timeout_ms": IDLE_MS}
        await conn.session.update(session=pcm_session(turn_detection=vad))
        updated = await until(conn, "session.updated")
        if mode != "duplex_emulated":
            # The upstream takes the turns and has no idle timeout: that field alone is
            # refused, unservable; the rest of the update applies.
            refused = [e["error"] for e in updated if e["type"] == "error"]
            assert [e["code"] for e in refused] == ["unsupported_by_upstream"]
            assert refused[0]["param"] == "session.audio.input.turn_detection.idle_timeout_ms"
            assert told_idle(updated) is None
            return
        assert told_idle(updated) == IDLE_MS
        clip = load_clip("utt05_clean.wav") + silence(1000)
        await append_audio(conn, clip)
        first = await events_until_response_done(conn)
        assert_completed_with_audio(first)
        assert "input_audio_buffer.timeout_triggered" not in [e["type"] for e in first]
        # The client says nothing more (and sends nothing): the timeout is a turn.
        events = await until(conn, "input_audio_buffer.timeout_triggered")
        assert [e["type"] for e in events] == ["input_audio_buffer.timeout_triggered"]
        told = InputAudioBufferTimeoutTriggered.model_validate(events[0])
        sent_ms = len(clip) * 1000 // (2 * 24000)
        assert 0 <= told.audio_start_ms <= told.audio_end_ms <= sent_ms
        answer = await events_until_response_done(conn)
        kinds = [e["type"] for e in answer]
        assert kinds[:3] == [
            "input_audio_buffer.committed",
            "conversation.item.added",
            "conversation.item.done",
        ]
        assert answer[0]["item_id"] == told.item_id
        assert "input_audio_buffer.speech_started" not in kinds
        assert_completed_with_audio(answer)


@pytest.mark.parametrize("value", [4999, 30_001, 6000.5])
async def test_a_value_outside_ga_s_range_is_a_coded_error(value: float) -> None:
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        vad = {"type": "server_vad", "idle_timeout_ms": value}
        await conn.session.update(session=pcm_session(turn_detection=vad), event_id="evt_idle")
        [error] = [e["error"] for e in await until(conn, "error") if e["type"] == "error"]
        assert error["code"] == "invalid_value"
        assert error["param"] == "turn_detection.idle_timeout_ms"
        assert error["event_id"] == "evt_idle"
