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
    nested = {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}}
    t.follow([SendUpstream({"type": "session.update", "session": nested})])
    t.sent(2500 * MS, 3500 * MS)
    assert _start(t, 300) == 2800  # a fresh detector, its clock at zero


def test_a_fresh_sessions_settings_go_before_the_audio_carried_to_it() -> None:
    t = UpstreamTimeline()
    t.sent(0, 5000 * MS)
    t.follow([RESUME])
    t.sent(5000 * MS, 5500 * MS)
    kept = {"turn_detection": {"type": "server_vad"}}
    given = SendUpstream({"type": "session.update", "session": kept})
    t.follow([AbortUpstream("lost", redial=True, after_loss=True), given])
    assert _start(t, 200) == 5200


def test_a_padded_start_maps_by_its_onset_across_a_dropped_span() -> None:
    m = TimelineMap()
    m.sent(0, 3000 * MS)  # heard before the answer
    m.sent(6900 * MS, 9000 * MS)  # 3.9 s dropped; released 100 ms before the onset
    # The upstream hears the onset at its 3100 ms and says 2800 (300 ms of padding),
    # which lies before the dropped span: the onset maps, the padding comes off after.
    assert m.client_start_ms(2800, 300) == 6700
    assert m.client_start_ms(1000, 300) == 1000  # within one run: as it is
    assert m.client_start_ms(3000, 0) == 6900
    assert TimelineMap().client_start_ms(2800, 300) == 2800
    moved = TimelineMap.from_wire({"sent": 3000 * MS, "runs": [[0, 5000 * MS]]})
    moved.sent(0, 1000 * MS)  # after a move the client's timeline starts again
    assert moved.client_start_ms(2900, 300) == 0  # never before it


def test_a_start_whose_onset_was_never_sent_maps_as_it_is() -> None:
    """vLLM-Omni's start is never before its detector's last reset (``vad.py``): a
    start plus the padding past what the upstream got was floored there, and its
    onset is no later than that audio."""
    m = TimelineMap()
    m.sent(0, 1000 * MS)
    m.sent(3000 * MS, 3100 * MS)  # the gate dropped the client's 1000..3000
    assert m.client_start_ms(900, 300) == 900  # not its 1200, past the audio sent
    assert m.client_start_ms(700, 300) == 2700  # its onset 1000 mapped: 3000, less 300


def test_the_padding_is_the_one_the_upstream_was_last_given() -> None:
    t = UpstreamTimeline()
    t.sent(0, 3000 * MS)
    t.sent(6900 * MS, 9000 * MS)
    assert _start(t, 2800) == 6700  # its default, 300 ms
    td = {"type": "server_vad", "prefix_padding_ms": 500}
    t.follow([SendUpstream({"type": "session.update", "session": {"turn_detection": td}})])
    t.sent(9000 * MS, 10000 * MS)
    t.sent(12000 * MS, 13000 * MS)  # the upstream's clock since the update: 1000 ms in
    assert t.padding_ms == 500
    assert _start(t, 600) == 11600  # onset 1100: client 12100, less 500
    moved = UpstreamTimeline()
    moved.restore(t.wire(), resumed={"type": "session.resumed"})
    assert moved.padding_ms == 500


def test_without_turn_detection_upstream_its_speech_times_are_the_clients_own() -> None:
    t = UpstreamTimeline()
    off = SendUpstream({"type": "session.update", "session": {"turn_detection": None}})
    t.follow([off])
    t.sent(0, 1000 * MS)
    t.sent(3000 * MS, 4000 * MS)
    # vLLM-Omni echoes a native client's append hints (or says 0): not its timeline.
    stopped = {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 1500}
    t.to_client(stopped)
    assert (_start(t, 1200), stopped["audio_end_ms"]) == (1200, 1500)
    moved = UpstreamTimeline()
    moved.restore(t.wire(), resumed={"type": "session.resumed"})
    assert moved.padding_ms is None


def test_a_commits_placeholder_end_stays_zero() -> None:
    t = UpstreamTimeline()
    t.sent(0, 5000 * MS)
    t.follow([AbortUpstream("lost", redial=True, after_loss=True)])
    t.sent(5000 * MS, 8000 * MS)
    ev = {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 0, "item_id": "i"}
    t.to_client(ev)
    assert ev["audio_end_ms"] == 0  # resolve_commit's: no time at all
    ev = {"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 1, "item_id": "i"}
    t.to_client(ev)
    assert ev["audio_end_ms"] == 5001


def test_audio_a_clear_drops_before_it_went_is_a_gap() -> None:
    t = UpstreamTimeline()
    t.sent(0, 1000 * MS)
    t.unsent(60 * MS)  # a float upstream's incomplete unit, dropped by a clear
    t.sent(1000 * MS, 2000 * MS)
    assert _start(t, 1000) == 1060
    t.unsent(5000 * MS)  # more than the last run: it goes
    assert t.now.sent_samples == 0
    t.sent(4000 * MS, 5000 * MS)
    assert _start(t, 200) == 4200


def test_appends_record_as_they_go_in_order() -> None:
    t = UpstreamTimeline()
    held = SendUpstream({"type": "input_audio_buffer.append"}, (0, 300 * MS))
    later = SendUpstream({"type": "input_audio_buffer.append"}, (1000 * MS, 1200 * MS))
    td = SendUpstream({"type": "session.update", "session": {"turn_detection": {}}})
    for action in (held, td, later):
        t.went(action)
    t.settled()
    assert t.now.sent_samples == 200 * MS  # what went after the update restarted it
    assert _start(t, 50) == 1050
