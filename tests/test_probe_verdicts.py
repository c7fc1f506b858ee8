"""The probe's verdict rules (``proxy/probe/checks/``), on traces built by hand: resume's
sequence problems, truncation's characters heard, barge-in timed by the report or by
the audio running out, full-duplex input, backpressure; and the ``--checks`` it takes.
"""

from __future__ import annotations

from typing import Any

import pytest

from proxy.probe.checks import backpressure, barge_in, full_duplex_input
from proxy.probe.checks.resume import seq_problems
from proxy.probe.checks.truncation import chars_heard
from proxy.probe.client import Event
from proxy.probe.runner import parse_checks
from proxy.probe.scenarios import OverlapTrace
from proxy.probe.tracks import ResponseTrack


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
