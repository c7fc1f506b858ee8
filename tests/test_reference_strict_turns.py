"""The strict stand-ins detect turns like vLLM-Omni 0.30.0 (``docs/fidelity.md`` rows 2,
2a, 2c): only with server VAD, an update naming ``turn_detection`` replaces the detector
and restarts its clock, and ``speech_started`` is the onset less the prefix padding.

Each test runs a real reference backend over a real WebSocket; "nothing happened" is
shown with the sentinel ``Peer.settle`` (``tests/reference_strict_client.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from proxy.reference import ReferenceOptions
from tests.reference_strict_client import QUIET, SERVER_VAD, SPEECH, answered, backend, session
from tests.testaudio import silence

pytestmark = pytest.mark.timeout(60)


async def test_without_server_vad_speech_is_never_a_turn() -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(np.concatenate([SPEECH, QUIET, SPEECH, QUIET]))
        seen = await p.settle()
        # note_input_append marks the buffer's first append; nothing ends or answers it.
        assert seen.count("input_audio_buffer.speech_started") == 1
        for kind in ("input_audio_buffer.speech_stopped", "input_audio_buffer.committed"):
            assert kind not in seen
        assert "response.created" not in seen


async def test_with_server_vad_silence_ends_the_turn_and_it_is_answered() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(np.concatenate([SPEECH, QUIET]))
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert int(str(stopped["audio_end_ms"])) > 0
        await p.until("input_audio_buffer.committed")
        await answered(p)


async def test_lenient_detects_turns_without_server_vad() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with backend(options) as (http, url), session(http, url) as (p, _):
        await p.speak(np.concatenate([SPEECH, QUIET]))
        await p.until("input_audio_buffer.committed")
        await answered(p)


async def test_update_naming_turn_detection_loses_the_speech_in_progress() -> None:
    """``session/control.py`` (``on_session_update``) adopts a fresh detector at once
    (``PendingTurnDetectionUpdate.commit``): the speech it was hearing never stops, so
    it is neither committed nor answered; the buffer keeps its audio and the open
    speech_started, and the next speech ends the turn on a clock that restarted."""
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(SPEECH)
        assert "input_audio_buffer.speech_started" in await p.settle()
        await p.send({"type": "session.update", "session": {"turn_detection": SERVER_VAD}})
        await p.until("session.updated")
        await p.speak(QUIET)
        seen = await p.settle()
        for kind in ("input_audio_buffer.speech_stopped", "input_audio_buffer.committed"):
            assert kind not in seen
        assert "response.created" not in seen
        await p.speak(np.concatenate([SPEECH, QUIET]))
        stopped = await p.until("input_audio_buffer.speech_stopped")
        done = await p.until("conversation.item.input_audio_transcription.completed")
        # realtime_events.py (emit_input_speech_started): the first start is still open.
        assert len(p.of("input_audio_buffer.speech_started")) == 1
        # The new detector's clock began at the update: 1.2 s of quiet, 1.5 s of speech.
        assert 2500 <= int(str(stopped["audio_end_ms"])) < 1500 + 2700
        assert stopped["item_id"] == p.of("input_audio_buffer.speech_started")[0]["item_id"]
        # Both utterances were in the buffer the turn commits.
        assert float(str(done["transcript"]).strip("(").split()[0]) >= 3.5
        await answered(p)


async def test_update_naming_turn_detection_restarts_the_vad_clock() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(silence(2000))
        await p.send(
            {
                "type": "session.update",
                "session": {"turn_detection": {**SERVER_VAD, "threshold": 0.6}},
            }
        )
        await p.until("session.updated")
        await p.speak(np.concatenate([silence(500), SPEECH, QUIET]))
        started = await p.until("input_audio_buffer.speech_started")
        assert int(str(started["audio_start_ms"])) < 1000  # not 2000 + 500
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert int(str(stopped["audio_end_ms"])) < 2000 + 500
        await answered(p)


async def test_speech_started_says_the_onset_less_the_prefix_padding() -> None:
    """``engine/duplex/vad.py``: ``max(last reset, onset - prefix_padding_ms)``."""
    td = {**SERVER_VAD, "prefix_padding_ms": 1000}
    async with backend() as (http, url), session(http, url, turn_detection=td) as (p, _):
        await p.speak(np.concatenate([silence(2000), SPEECH, QUIET]))
        started = await p.until("input_audio_buffer.speech_started")
        assert 950 <= int(str(started["audio_start_ms"])) <= 1050  # the onset is at 2 s
        await answered(p)
        # The next onset at 4.7 s: 1 s of padding reaches back past the commit's reset.
        await p.speak(np.concatenate([SPEECH, QUIET]))
        again = int(str((await p.until("input_audio_buffer.speech_started"))["audio_start_ms"]))
        assert 3700 + 100 <= again < 4700, again


async def test_a_clear_does_not_floor_the_padded_start() -> None:
    """Only a commit resets vLLM-Omni's detector (``resolve_commit``'s ``reset_vad``):
    a clear leaves the floor where it was."""
    td = {**SERVER_VAD, "prefix_padding_ms": 1000}
    async with backend() as (http, url), session(http, url, turn_detection=td) as (p, _):
        await p.speak(silence(2000))
        await p.send({"type": "input_audio_buffer.clear"})
        await p.until("input_audio_buffer.cleared")
        await p.speak(np.concatenate([SPEECH, QUIET]))  # the onset at 2 s on the VAD clock
        started = await p.until("input_audio_buffer.speech_started")
        assert 950 <= int(str(started["audio_start_ms"])) <= 1050  # max(0, 2000 - 1000)


async def test_update_not_naming_turn_detection_keeps_the_detector() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "session.update", "session": {"temperature": 0.5}})
        await p.until("session.updated")
        await p.speak(QUIET)
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert int(str(stopped["audio_end_ms"])) >= 1400
        await answered(p)


async def test_lenient_detector_ignores_an_update_naming_turn_detection() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with (
        backend(options) as (http, url),
        session(http, url, turn_detection=SERVER_VAD) as (p, _),
    ):
        await p.speak(SPEECH)
        await p.send({"type": "session.update", "session": {"turn_detection": SERVER_VAD}})
        await p.until("session.updated")
        await p.speak(QUIET)
        await p.until("input_audio_buffer.committed")
        await answered(p)
