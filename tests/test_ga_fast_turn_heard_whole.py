"""A spoken turn sent faster than real time reaches the upstream whole, through the
``openai`` SDK under server VAD, in every mode.

Clients that send a recorded utterance (tests, telephony bridges catching up) send it
at once; the proxy's VAD then judges it later than it arrived. The turn it finds must
still begin at its speech onset (with prefix padding), not where the input kept
between turns ran out (``shim/client_events.py``, ``shim/vad_timeline.py``). Every
event is checked against the SDK's GA types.
"""

from __future__ import annotations

import pytest

from tests.openai_sdk_client import (
    MODES,
    append_audio,
    assert_completed_with_audio,
    events_until_response_done,
    first_session_created,
    pcm_session,
    sdk_connection,
)
from tests.openai_sdk_turns import heard_seconds, speech_seconds
from tests.servers import load_clip, silence

CLIP = "utt04_clean.wav"  # speech from 0.71 s to 3.27 s of 3.97 s


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_turn_sent_at_once_is_heard_from_its_onset(kind: str, mode: str) -> None:
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await conn.session.update(session=pcm_session())
        await append_audio(conn, load_clip(CLIP) + silence(1200))
        answer = await events_until_response_done(conn)
        assert_completed_with_audio(answer)
        assert heard_seconds(answer) >= speech_seconds(CLIP)
