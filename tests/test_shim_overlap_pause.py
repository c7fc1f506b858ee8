"""A hold through an opener's pause (``shim/overlap_hold.py``): it decides a barge-in
only over a run of the VAD's (so speech_started is always followed by its
speech_stopped), it ends in time when no more audio comes, and sparse sure windows
never add up to a cut."""

from __future__ import annotations

from shim.actions import Action
from tests.duplex_relay_script import AID, RID, start_response
from tests.shim_overlap_sessions import STARTED, STOPPED, relay, turn_based
from tests.shim_script import Script, client_events, pcm_b64, types
from tests.turn_based_script import respond, run_turn

OPENER = [0.97] * 12 + [0.05] * 17  # "Sorry." and a pause past the VAD's silence


def _answering() -> Script:
    """A turn-based session answering a first turn, its answer long enough to speak over."""
    sc = turn_based(type="server_vad")
    run_turn(sc)
    respond(sc, chunks=60)
    return sc


def _short_burst_then_quiet(sc: Script) -> list[Action]:
    out = sc.speak([0.97] * 2)  # "mm": shorter than the VAD's min_speech_ms
    for _ in range(60):
        out += sc.speak([0.05]) + sc.tick(0)
    return out + sc.tick(5000)


def test_a_short_burst_in_the_openers_pause_is_told_with_its_stop() -> None:
    sc = _answering()
    sc.speak(OPENER)
    assert sc.s.overlap.holding, "held through the pause"
    t = types(_short_burst_then_quiet(sc))
    assert t.count(STARTED) == t.count(STOPPED), t


def test_a_short_burst_after_a_released_opener_is_told_with_its_stop() -> None:
    sc = _answering()
    sc.speak([0.97] * 12 + [0.4] * 3 + [0.05] * 17)  # released, carried
    t = types(_short_burst_then_quiet(sc))
    assert t.count(STARTED) == t.count(STOPPED), t


def test_a_short_burst_in_the_pause_is_told_with_its_stop_when_relayed() -> None:
    sc = relay()
    start_response(sc, chunks=60)
    sc.speak(OPENER)
    t = types(_short_burst_then_quiet(sc))
    assert t.count(STARTED) == t.count(STOPPED), t


def test_the_voice_back_in_the_pause_is_a_barge_in_told_once() -> None:
    sc = _answering()
    sc.speak(OPENER)
    out = sc.speak([0.97] * 10 + [0.05] * 30) + sc.tick(3000)
    t = types(out)
    assert t.count(STARTED) == 1 == t.count(STOPPED), t
    assert t.index(STARTED) < t.index(STOPPED)


def test_a_hold_past_the_vads_stop_ends_when_no_more_audio_comes() -> None:
    sc = turn_based(type="server_vad")
    run_turn(sc)
    respond(sc, chunks=10)
    sc.speak(OPENER)
    assert sc.s.overlap.holding
    out = respond(sc, chunks=5)
    out += sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    for _ in range(3):
        out += sc.tick(1000)
    t = types(out)
    assert not sc.s.overlap.holding, t
    assert t.count("response.output_audio.delta") == 5 and "response.done" in t, t


def test_a_hold_past_the_vads_stop_ends_when_relayed() -> None:
    sc = relay()
    sc.upstream({"type": "response.created", "response": {"id": RID, "status": "in_progress"}})
    delta = {
        "type": "response.output_audio.delta",
        "response_id": RID,
        "item_id": AID,
        "output_index": 0,
        "content_index": 0,
        "format": "pcm16",
        "sample_rate_hz": 24000,
    }
    for _ in range(10):
        sc.upstream({**delta, "delta": pcm_b64(100, 24000)})
    sc.speak(OPENER)
    assert sc.s.overlap.holding
    out: list[Action] = []
    for _ in range(5):
        out += sc.upstream({**delta, "delta": pcm_b64(100, 24000)})
    out += sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    for _ in range(3):
        out += sc.tick(1000)
    assert not sc.s.overlap.holding
    assert "response.done" in types(out)


def test_sparse_sure_windows_in_one_run_never_add_up_to_a_cut() -> None:
    """One sure window every 512 ms inside one VAD run (the gate kept on by doubtful
    windows between): each holds and is released; none goes on from the last."""
    sc = turn_based(type="server_vad", overlap_events=True)
    run_turn(sc)
    respond(sc, chunks=200)
    out: list[Action] = []
    for _ in range(20):
        out += sc.speak([0.97] + [0.45] * 15)
    t = [e["type"] for e in client_events(out)]
    assert sc.s.gate.speaking
    assert STARTED not in t, [x for x in t if not x.endswith("delta")]


def test_sparse_sure_windows_alone_never_add_up_to_a_cut() -> None:
    sc = turn_based(type="server_vad", overlap_events=True)
    run_turn(sc)
    respond(sc, chunks=100)
    out: list[Action] = []
    for _ in range(14):
        out += sc.speak([0.97] + [0.05] * 15)
    t = [e["type"] for e in client_events(out)]
    assert STARTED not in t, [x for x in t if not x.endswith("delta")]


def test_a_lone_loud_window_then_a_television_pauses_the_answer_once() -> None:
    """A knock or a loud word (one sure window at the user's level), then a television
    12 dB under the user: the overlap begun on the lone window goes on over the
    television's windows and is released as background, which dismisses the run: the
    television does not hold the answer again and again."""
    from shim.dialects.turn_based import TurnBasedSession
    from shim.session import ShimSettings
    from shim.vad_gate import VadParams

    settings = ShimSettings(vad=VadParams(), echo_suppression=False, min_barge_in_ms=800)
    sc = Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))
    sc.client({"type": "session.update", "session": {"turn_detection": {"overlap_events": True}}})
    run_turn(sc)
    respond(sc, chunks=40)
    evs = client_events(sc.speak([0.97], peak=4000) + sc.speak([0.9] * 94, peak=1000))
    t = [str(e["type"]) for e in evs]
    assert STARTED not in t
    assert t.count("output_audio_buffer.paused") == 1, t.count("output_audio_buffer.paused")
