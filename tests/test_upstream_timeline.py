"""The upstream's input timeline mapped onto the client's (``shim/upstream_timeline.py``)."""

from __future__ import annotations

from shim.actions import AbortUpstream, ResumeUpstream, SendUpstream
from shim.upstream_timeline import KEPT, TimelineMap, UpstreamTimeline

MS = 16  # input samples per ms (16 kHz)
RESUME = ResumeUpstream("up-1", "tok", 0)


def test_nothing_dropped_maps_as_it_is() -> None:
    m = TimelineMap()
    for start in range(0, 3000 * MS, 20 * MS):
        m.sent(start, start + 20 * MS)
    assert m.client_ms(0) == 0
    assert m.client_ms(1234) == 1234
    assert TimelineMap().client_ms(500) == 500  # nothing sent yet


def test_a_dropped_span_moves_what_follows_it_by_its_length() -> None:
    m = TimelineMap()
    m.sent(0, 1000 * MS)  # heard
    m.sent(2300 * MS, 4000 * MS)  # 1.3 s held over an answer and dropped before it
    m.sent(4000 * MS, 5000 * MS)
    assert m.client_ms(500) == 500
    assert m.client_ms(1100) == 2400
    assert m.client_ms(3000) == 4300
    # At the gap: a start is the audio after it, an end the audio before it.
    assert m.client_ms(1000) == 2300
    assert m.client_ms(1000, end=True) == 1000


def test_gaps_add_up() -> None:
    m = TimelineMap()
    for turn in range(4):  # 3.56 s heard, then 2.52 s of which 1.3 s dropped
        begin = turn * 6080 * MS
        m.sent(begin, begin + 3560 * MS)
        m.sent(begin + 4860 * MS, begin + 6080 * MS)
    for turn in range(4):
        upstream = turn * (6080 - 1300) + 84
        assert m.client_ms(upstream) == turn * 6080 + 84


def test_old_runs_fold_into_the_oldest_kept() -> None:
    m = TimelineMap()
    for k in range(KEPT * 3):
        m.sent(k * 200 * MS, k * 200 * MS + 100 * MS)  # every other 100 ms dropped
    last = KEPT * 3 - 1
    assert m.client_ms(last * 100 + 50) == last * 200 + 50
    assert len(m.wire()["runs"]) == KEPT


def test_a_fresh_upstream_session_counts_from_the_audio_it_got_first() -> None:
    t = UpstreamTimeline()
    t.sent(0, 5000 * MS)
    t.follow([AbortUpstream("lost", redial=True, after_loss=True)])
    t.sent(5000 * MS, 8000 * MS)  # the fresh session's first audio
    assert _start(t, 1000) == 6000


def test_a_failed_resume_gives_the_fresh_session_what_went_since() -> None:
    t = UpstreamTimeline()
    t.sent(0, 5000 * MS)
    t.follow([RESUME])
    t.sent(5000 * MS, 5500 * MS)  # held by the edge, then carried to the fresh session
    t.follow([AbortUpstream("lost", redial=True, after_loss=True)])
    t.sent(5500 * MS, 6000 * MS)
    assert _start(t, 200) == 5200


def test_a_resume_that_succeeds_goes_on() -> None:
    t = UpstreamTimeline()
    t.sent(0, 5000 * MS)
    t.follow([RESUME])
    t.sent(5000 * MS, 5500 * MS)
    t.reattached({"type": "session.resumed"})
    t.sent(5500 * MS, 6000 * MS)
    assert _start(t, 5200) == 5200


def test_only_input_timeline_fields_are_rewritten() -> None:
    t = UpstreamTimeline()
    t.sent(0, 1000 * MS)
    t.sent(3000 * MS, 4000 * MS)
    stopped = {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 1500}
    truncated = {"type": "conversation.item.truncated", "audio_end_ms": 1500}
    timeout = {
        "type": "input_audio_buffer.timeout_triggered",
        "audio_start_ms": 1200,
        "audio_end_ms": 1800,
    }
    for ev in (stopped, truncated, timeout):
        t.to_client(ev)
    assert stopped["audio_end_ms"] == 3500
    assert truncated["audio_end_ms"] == 1500  # the assistant's audio, not the input
    assert (timeout["audio_start_ms"], timeout["audio_end_ms"]) == (3200, 3800)


def test_a_move_keeps_a_resumed_sessions_timeline() -> None:
    t = UpstreamTimeline()
    t.sent(0, 1000 * MS)
    t.sent(3000 * MS, 4000 * MS)  # the upstream got 2 s
    snap = t.wire()
    moved = UpstreamTimeline()
    moved.restore(snap, resumed={"type": "session.resumed"})
    assert _start(moved, 1500) == 3500  # audio from before the move
    moved.sent(0, 1000 * MS)  # the client's timeline starts again after the move
    assert _start(moved, 2300) == 300
    fresh = UpstreamTimeline()
    fresh.restore(snap, resumed=None)  # a fresh upstream session counts from zero
    fresh.sent(0, 1000 * MS)
    assert _start(fresh, 300) == 300


def test_a_snapshot_without_a_map_or_a_broken_one_reads_as_nothing_dropped() -> None:
    for snap in ({}, {"upstream_timeline": {"sent": "x"}}, {"upstream_timeline": [1]}):
        t = UpstreamTimeline()
        t.restore(snap, resumed={"type": "session.resumed"})
        assert _start(t, 700) == 700


def _start(t: UpstreamTimeline, ms: int) -> int:
    ev = {"type": "input_audio_buffer.speech_started", "audio_start_ms": ms}
    t.to_client(ev)
    return int(ev["audio_start_ms"])


def test_an_update_naming_turn_detection_restarts_the_upstreams_clock() -> None:
    t = UpstreamTimeline()
    t.sent(0, 2000 * MS)
    t.follow([SendUpstream({"type": "session.update", "session": {"instructions": "x"}})])
    t.sent(2000 * MS, 2500 * MS)
    assert _start(t, 2300) == 2300  # its detector as it was
    nested = {"audio": {"input": {"turn_detection": None}}}
    t.follow([SendUpstream({"type": "session.update", "session": nested})])
    t.sent(2500 * MS, 3500 * MS)
    assert _start(t, 300) == 2800  # a fresh detector, its clock at zero


def test_a_fresh_sessions_settings_go_before_the_audio_carried_to_it() -> None:
    t = UpstreamTimeline()
    t.sent(0, 5000 * MS)
    t.follow([RESUME])
    t.sent(5000 * MS, 5500 * MS)
    given = SendUpstream({"type": "session.update", "session": {"turn_detection": None}})
    t.follow([AbortUpstream("lost", redial=True, after_loss=True), given])
    assert _start(t, 200) == 5200
