"""What the probe reads from the server (``proxy/probe/tracks.py``, ``client.py``,
``handshake.py``): each response followed by its ids, audio, text and end, both error
shapes, and the input format the session was opened with.
"""

from __future__ import annotations

from typing import Any

import pytest

from proxy.probe.client import error_event_id
from proxy.probe.handshake import realtime_session, session_info
from proxy.probe.tracks import Tracker, b64_size
from shim.audio import PCM_F32, AudioFormat, b64encode
from shim.wire import error_code


def test_b64_size_matches_decoding() -> None:
    for n in range(7):
        assert b64_size(b64encode(b"x" * n)) == n


def test_realtime_tracker_follows_ids_audio_text_and_the_end() -> None:
    tracker = Tracker("realtime", output_rate=24000)
    ids = {"response_id": "r1", "item_id": "i1", "output_index": 0, "content_index": 0}
    audio = b64encode(b"\0\0" * 4800)  # 200 ms at 24 kHz
    tracker.feed(1.0, "response.created", {"response": {"id": "r1"}})
    tracker.feed(1.1, "response.output_audio.delta", {**ids, "delta": audio})
    tracker.feed(1.1, "response.output_audio_transcript.delta", {**ids, "delta": "Hi "})
    marks = {"audio_text_marks": [{"text_chars": 3, "audio_end_ms": 200}]}
    tracker.feed(
        1.3,
        "response.output_audio.delta",
        {**ids, "delta": audio, "sample_rate_hz": 48000, "metadata": marks},
    )
    done = {
        "response": {
            "id": "r1",
            "status": "cancelled",
            "status_details": {"reason": "turn_detected"},
        }
    }
    tracker.feed(1.4, "response.done", done)
    tracker.feed(1.5, "response.output_audio.delta", {**ids, "delta": audio})
    track = tracker.responses["r1"]
    assert track.item_id == "i1" and track.transcript == "Hi "
    assert track.audio_ms == pytest.approx(200 + 100 + 200)
    assert track.marks == [(200, 3)]
    assert (track.status, track.reason, track.done_count) == ("cancelled", "turn_detected", 1)
    assert track.deltas_after_done == 1 and track.audio_after_done_ms == pytest.approx(200)
    assert track.audio_ms_at(1.2) == pytest.approx(200)


def test_turn_tracker_numbers_generations() -> None:
    tracker = Tracker("turn")
    audio = b64encode(b"\0\0" * 2400)
    for t in (1.0, 5.0):
        tracker.feed(t, "transcription.delta", {"delta": "ok"})
        tracker.feed(t, "response.output_audio.delta", {"audio": audio, "sample_rate_hz": 24000})
        tracker.feed(t + 1, "transcription.done", {"text": "ok"})
        tracker.feed(t + 1, "response.output_audio.done", {"has_audio": True})
    assert tracker.order == ["turn-1", "turn-2"]
    assert all(
        t.status == "completed" and t.audio_ms == pytest.approx(100) for t in tracker.tracks()
    )


@pytest.mark.parametrize(
    ("event", "code", "event_id"),
    [
        ({"type": "error", "error": {"code": "x", "event_id": "e1"}}, "x", "e1"),
        (
            {"type": "error", "error": "Unknown event type: y", "code": "unknown_event"},
            "unknown_event",
            None,
        ),
        (
            {"type": "error", "code": "unsupported", "error": "VAD realtime is not enabled"},
            "unsupported",
            None,
        ),
    ],
)
def test_both_error_shapes(event: dict[str, Any], code: str, event_id: str | None) -> None:
    assert error_code(event) == code and error_event_id(event) == event_id


def test_a_session_opened_with_float_input_is_spoken_to_in_it() -> None:
    """A PersonaPlex route opens its session with pcm_f32le at 24 kHz: the probe keeps it."""
    created = {
        "type": "session.created",
        "session": {"id": "s", "input_audio_format": "pcm_f32le", "sample_rate_hz": 24000},
    }
    info = session_info(created, "ws://x")
    assert info.input_format == AudioFormat(PCM_F32, 24000)
    update = realtime_session("m", True, info.input_format)
    assert update["input_audio_format"] == "pcm_f32le" and update["sample_rate_hz"] == 24000
    assert update["audio"]["input"]["format"] == {"type": "audio/pcm_f32le", "rate": 24000}
    plain = session_info({"type": "session.created", "session": {"id": "s"}}, "ws://x")
    assert plain.input_format is None
    assert realtime_session("m", True)["audio"]["input"]["format"]["type"] == "audio/pcm"
