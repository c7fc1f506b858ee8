"""The probe's pure parts: stimulus, response tracking, the verdict rules, the report."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from proxy.probe.checks import backpressure, barge_in, full_duplex_input
from proxy.probe.checks.resume import seq_problems
from proxy.probe.checks.truncation import chars_heard
from proxy.probe.client import Event, error_event_id
from proxy.probe.handshake import realtime_session, session_info
from proxy.probe.runner import parse_checks
from proxy.probe.scenarios import OverlapTrace
from proxy.probe.stimulus import StimulusError, load_stimulus, split_utterances
from proxy.probe.tracks import ResponseTrack, Tracker, b64_size
from shim.audio import PCM_F32, AudioFormat, b64encode
from shim.wire import error_code

# ---- stimulus ----


def _write_wav(
    path: Path, samples: np.ndarray, rate: int, channels: int = 1, width: int = 2
) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())


def _tone(ms: int, rate: int) -> np.ndarray:
    t = np.arange(rate * ms // 1000) / rate
    return (0.3 * 32767 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)


def test_bundled_stimulus_is_two_utterances_at_both_rates() -> None:
    stimulus = load_stimulus()
    assert stimulus.utterances == 2
    for utterance in (stimulus.turn, stimulus.overlap):
        assert 1000 <= utterance.duration_ms <= 2500
        assert abs(utterance.pcm16.size * 3 - utterance.pcm24.size * 2) <= 3
    assert not np.array_equal(stimulus.turn.pcm24[:4800], stimulus.overlap.pcm24[:4800])
    with wave.open(stimulus.source) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (24000, 2, 1)


def test_split_needs_300_ms_of_quiet_and_of_speech() -> None:
    rate = 24000
    silence = np.zeros(rate // 2, dtype=np.int16)
    short_gap = np.zeros(rate // 10, dtype=np.int16)
    click = _tone(100, rate)
    audio = np.concatenate(
        [
            silence,
            _tone(500, rate),
            short_gap,
            _tone(500, rate),
            silence,
            click,
            silence,
            _tone(400, rate),
        ]
    )
    parts = split_utterances(audio, rate)
    assert [round(p.size / rate, 2) for p in parts] == [
        1.14,
        0.42,
    ]  # 20 ms padding each side (none past the end)


def test_speech_file_stereo_48k_is_mixed_and_resampled(tmp_path: Path) -> None:
    mono = _tone(800, 48000)
    stereo = np.stack([mono, mono], axis=1).reshape(-1)
    path = tmp_path / "s.wav"
    _write_wav(path, stereo, 48000, channels=2)
    stimulus = load_stimulus(path)
    assert stimulus.utterances == 1 and stimulus.overlap is stimulus.turn
    assert abs(stimulus.turn.duration_ms - 840) <= 40


@pytest.mark.parametrize("width", [1, 3])
def test_speech_file_must_be_16_bit(tmp_path: Path, width: int) -> None:
    path = tmp_path / "s.wav"
    _write_wav(path, np.zeros(1000 * width, dtype=np.uint8), 16000, width=width)
    with pytest.raises(StimulusError, match="16-bit"):
        load_stimulus(path)


def test_silent_speech_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.wav"
    _write_wav(path, np.zeros(24000, dtype=np.int16), 24000)
    with pytest.raises(StimulusError, match="no speech"):
        load_stimulus(path)


# ---- tracking ----


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


# ---- verdict rules ----


def test_seq_problems() -> None:
    assert seq_problems(10, [11, 12, 13]) == {"gaps": [], "repeats": [], "out_of_order": []}
    assert seq_problems(10, [11, 13, 14]) == {"gaps": [12], "repeats": [], "out_of_order": []}
    assert seq_problems(10, [11, 11, 12, 9]) == {"gaps": [], "repeats": [11, 9], "out_of_order": []}
    assert seq_problems(10, [12, 11]) == {"gaps": [11], "repeats": [], "out_of_order": [11]}


def test_chars_heard_uses_marks_when_published() -> None:
    track = ResponseTrack("r", 0, transcript="x" * 100, audio_ms=1000.0)
    assert chars_heard(track, 500) == 50
    track.marks = [(200, 10), (400, 30), (600, 60), (1000, 100)]
    assert chars_heard(track, 500) == 60
    assert chars_heard(track, 1000) == 100


def _trace(**track: Any) -> OverlapTrace:
    response = ResponseTrack("r1", 0, first_audio_t=9.0, **track)
    return OverlapTrace(
        error=None,
        dialect="realtime",
        capabilities={"target_barge_in_latency_ms": 400},
        events=[],
        response=response,
        turn_end_t=8.5,
        onset_t=10.0,
        overlap_end_t=11.5,
    )


def test_barge_in_rules() -> None:
    quick = _trace(
        last_audio_t=10.3, audio_ms=1400.0, status="cancelled", done_t=10.4, done_count=1
    )
    assert barge_in.analyse(quick, 1000).verdict == "pass"
    slow = _trace(last_audio_t=10.6, audio_ms=1600.0, status="cancelled", done_t=10.7, done_count=1)
    assert "limit 400 ms, declared target" in barge_in.analyse(slow, 1000).summary
    ran_on = _trace(
        last_audio_t=12.9, audio_ms=4000.0, status="completed", done_t=13.0, done_count=1
    )
    assert barge_in.analyse(ran_on, 1000).summary.startswith("not interrupted")
    silent = _trace(last_audio_t=10.2, audio_ms=1200.0)
    assert barge_in.analyse(silent, 1000).summary == "the response was never reported cancelled"
    early = _trace(last_audio_t=9.5, audio_ms=500.0, status="completed", done_count=1)
    assert barge_in.analyse(early, 1000).verdict == "error"


def test_full_duplex_input_counts_only_reactions_while_speaking() -> None:
    trace = _trace(last_audio_t=11.9, audio_ms=3000.0)
    assert trace.events is not None
    trace.events += [
        Event(9.5, "input_audio_buffer.speech_started", {}, 0),  # before the probe spoke
        Event(12.5, "input_audio_buffer.speech_started", {}, 0),  # after the answer ended
    ]
    result = full_duplex_input.analyse(trace)
    assert result.verdict == "fail" and "reacted only" in result.summary
    trace.events.append(Event(10.2, "overlap.decision", {}, 0))
    trace.events.sort(key=lambda e: e.t)
    assert full_duplex_input.analyse(trace).verdict == "pass"
    trace.events.append(
        Event(10.3, "error", {"type": "error", "error": {"code": "input_backpressure"}}, 0)
    )
    refused = full_duplex_input.analyse(trace)
    assert refused.verdict == "fail" and "input_backpressure" in refused.summary


def _bp(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"closed": False, "close_code": None, "close_reason": None}
    data.update({"send_blocked": False, "errors": [], "requests_sent": 10, "stalled_s": 2.0})
    data.update(over)
    return data


@pytest.mark.parametrize(
    ("data", "delivered", "verdict", "words"),
    [
        (_bp(), 40 << 20, "fail", "without closing"),
        (_bp(closed=True, close_code=1008), 40 << 20, "fail", "then closed"),
        (
            _bp(closed=True, close_code=1008, close_reason="too slow"),
            5 << 20,
            "pass",
            "then closed it (1008 'too slow')",
        ),
        (
            _bp(closed=True, close_code=1006),
            1 << 20,
            "pass",
            "dropped the connection without a close",
        ),
        (_bp(send_blocked=True), 2 << 20, "pass", "stopped reading the stalled client"),
        (_bp(), 2 << 20, "pass", "62.0 MB dropped"),
    ],
)
def test_backpressure_rules(data: dict[str, Any], delivered: int, verdict: str, words: str) -> None:
    result = backpressure._verdict(data, delivered, 32 << 20, 64 << 20)
    assert result.verdict == verdict and words in result.summary


def test_parse_checks() -> None:
    assert parse_checks("barge_in, resume") == ("barge_in", "resume")
    with pytest.raises(ValueError, match="unknown check"):
        parse_checks("barge_in,latency")
    with pytest.raises(ValueError, match="unknown check"):
        parse_checks(" , ")


def test_full_duplex_input_setup_error_only_when_the_answer_ended_before_the_onset() -> None:
    early = _trace(last_audio_t=9.5, audio_ms=500.0)  # over at 9.5, the probe spoke at 10.0
    assert full_duplex_input.analyse(early).verdict == "error"
    # A quick barge-in: the audio stops 60 ms after the onset, announced by speech_started.
    cut = _trace(last_audio_t=10.06, audio_ms=1060.0)
    assert cut.events is not None
    cut.events.append(Event(10.1, "input_audio_buffer.speech_started", {}, 0))
    assert full_duplex_input.analyse(cut).verdict == "pass"


def test_barge_in_over_coarse_chunks_is_timed_by_the_report() -> None:
    """MiniCPM-o-like 1000 ms chunks: every delta came before the onset, still playing."""
    cut = _trace(
        last_audio_t=9.9,
        audio_ms=1000.0,
        audio_log=[(9.9, 1000.0)],
        status="cancelled",
        done_t=10.3,
        done_count=1,
    )
    assert cut.response is not None and cut.response.playing_until() == pytest.approx(10.9)
    result = barge_in.analyse(cut, 1000)
    assert result.verdict == "pass", result.summary
    assert result.data["latency_ms"] == 300 and result.data["stopped_by"] == "response.done"
    assert result.summary.startswith("no audio after speech onset; reported cancelled 300 ms")
    late = _trace(
        last_audio_t=9.9,
        audio_ms=1000.0,
        audio_log=[(9.9, 1000.0)],
        status="cancelled",
        done_t=10.6,
        done_count=1,
    )
    assert "limit 400 ms, declared target" in barge_in.analyse(late, 1000).summary
    # Its audio had played out before the probe spoke: nothing was talked over.
    over = _trace(
        last_audio_t=9.0,
        audio_ms=500.0,
        audio_log=[(9.0, 500.0)],
        status="completed",
        done_t=9.1,
        done_count=1,
    )
    assert barge_in.analyse(over, 1000).verdict == "error"


def test_barge_in_whose_audio_ran_out_before_the_report_is_timed_by_the_audio() -> None:
    """Three 100 ms deltas before the onset, the rest held back at once, the report late:
    the client's audio stopped when what it had ran out (63 ms after the onset), not when
    the response was reported cancelled."""
    held = _trace(
        last_audio_t=9.963,
        audio_ms=300.0,
        audio_log=[(9.763, 100.0), (9.859, 200.0), (9.963, 300.0)],
        status="cancelled",
        done_t=10.7,
        done_count=1,
    )
    assert held.response is not None
    assert held.response.playing_until() == pytest.approx(10.063)
    result = barge_in.analyse(held, 1000)
    assert result.verdict == "pass", result.summary
    assert result.data["latency_ms"] == 63 and result.data["stopped_by"] == "audio ran out"
    assert result.summary.startswith("audio stopped 63 ms after speech onset")


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
