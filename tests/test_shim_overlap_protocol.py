"""The overlap protocol by script: speech_started only once a barge-in is decided,
released overlaps never told, the per-session decision time, the opt-in
paused/resumed events, and the duplex upstream's own speech events held during
playback (``docs/protocol.md``, "Overlap protocol")."""

from __future__ import annotations

from typing import Any

import pytest

from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.duplex_relay_script import RID, start_response
from tests.shim_overlap_sessions import STARTED, STOPPED, relay, turn_based
from tests.shim_script import Script, client_events, types
from tests.turn_based_script import SILENCE, respond, run_turn


def windows_until(sc: Script, kind: str, limit: int = 60) -> tuple[int, list[str]]:
    """Speak window by window until ``kind`` is sent; (windows spoken, events then)."""
    for n in range(1, limit + 1):
        t = types(sc.speak([0.9]))
        if kind in t:
            return n, t
    raise AssertionError(f"no {kind} in {limit} windows of speech")


@pytest.mark.parametrize("decision_ms", [300, 500, 900])
def test_speech_over_the_answer_is_told_only_when_decided_a_barge_in(decision_ms: int) -> None:
    sc = turn_based(type="server_vad", barge_in_decision_ms=decision_ms)
    run_turn(sc)
    respond(sc, chunks=30)
    n, t = windows_until(sc, STARTED)
    # The overlap begins at the start of its first user-like window (two in a row hold
    # the output); decided decision_ms later, on the first window at or past it.
    assert n * 32 >= decision_ms, "no speech_started before the decision"
    assert n * 32 <= decision_ms + 64
    assert t.index(STARTED) < t.index("response.done"), "then the response is cancelled"


def test_outside_playback_speech_started_is_immediate() -> None:
    sc = turn_based()
    n, _ = windows_until(sc, STARTED)
    assert n * 32 <= VadParams().min_speech_ms + 32, "GA semantics: after min_speech_ms"


def test_the_decision_time_is_validated_like_the_other_numbers() -> None:
    sc = turn_based()
    for bad in (50, 1.5, "600", True, 10_000):
        td = {"barge_in_decision_ms": bad}
        update = {"type": "session.update", "session": {"turn_detection": td}}
        (event,) = client_events(sc.client(update))
        assert event["type"] == "error"
        assert event["error"]["code"] == "invalid_value"
        assert event["error"]["param"] == "turn_detection.barge_in_decision_ms"
    update = {"type": "session.update", "session": {"turn_detection": {"overlap_events": 1}}}
    (event,) = client_events(sc.client(update))
    assert event["error"]["param"] == "turn_detection.overlap_events"


def test_a_session_update_shows_the_extensions_only_once_set() -> None:
    sc = turn_based()
    (plain,) = client_events(sc.client({"type": "session.update", "session": {}}))
    td = plain["session"]["audio"]["input"]["turn_detection"]
    assert "barge_in_decision_ms" not in td and "overlap_events" not in td
    update = {
        "type": "session.update",
        "session": {"turn_detection": {"barge_in_decision_ms": 450, "overlap_events": True}},
    }
    (ext,) = client_events(sc.client(update))
    td = ext["session"]["audio"]["input"]["turn_detection"]
    assert td["barge_in_decision_ms"] == 450 and td["overlap_events"] is True
    again = {"type": "session.update", "session": {"turn_detection": {"threshold": 0.6}}}
    (kept,) = client_events(sc.client(again))
    assert kept["session"]["audio"]["input"]["turn_detection"]["barge_in_decision_ms"] == 450


def test_opted_in_clients_hear_paused_then_resumed_with_the_reason() -> None:
    sc = turn_based(type="server_vad", overlap_events=True)
    run_turn(sc)
    respond(sc, chunks=10)
    out = client_events(sc.speak([0.9] * 4))
    (paused,) = out
    assert paused["type"] == "output_audio_buffer.paused"
    assert paused["reason"] == "user_speech_suspected" and paused["response_id"]
    respond(sc, chunks=2)
    t = types(sc.speak(SILENCE))
    assert STARTED not in t and STOPPED not in t
    assert t[0] == "output_audio_buffer.resumed"
    assert t.count("response.output_audio.delta") == 2, "then the held audio"


def test_released_resumed_says_backchannel_and_others_never_get_extensions() -> None:
    for opted in (True, False):
        sc = turn_based(type="server_vad", overlap_events=opted)
        run_turn(sc)
        respond(sc, chunks=10)
        evs = client_events(sc.speak([0.9] * 4 + SILENCE))
        ext = [e for e in evs if str(e["type"]).startswith("output_audio_buffer.")]
        if opted:
            assert [(e["type"], e["reason"]) for e in ext] == [
                ("output_audio_buffer.paused", "user_speech_suspected"),
                ("output_audio_buffer.resumed", "backchannel"),
            ]
        else:
            assert not ext, "a client that did not opt in never gets them"


def upstream_speech(sc: Script, kind: str, seq: int) -> list[str]:
    # Without a seq: the relay checks seqs only where the upstream numbers its events.
    return types(sc.upstream({"type": kind, "item_id": f"item_up{seq}"}))


def test_the_upstreams_speech_events_during_playback_never_reach_the_client() -> None:
    sc = relay()
    start_response(sc, chunks=10)  # 1 s of audio playing
    assert not upstream_speech(sc, STARTED, 100), "held: the upstream hears echo too"
    sc.speak([0.05] * 4)
    assert not upstream_speech(sc, STOPPED, 101)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    t = types(sc.tick(2000))  # the answer played out
    assert STARTED not in t and STOPPED not in t, "a start and stop inside playback: dropped"
    assert upstream_speech(sc, STARTED, 102) == [STARTED], "nothing plays: relayed at once"
    assert upstream_speech(sc, STOPPED, 103) == [STOPPED]


def test_upstream_speech_the_proxy_hears_too_is_relayed_once_playback_ends() -> None:
    sc = relay()
    start_response(sc, chunks=3)
    assert not upstream_speech(sc, STARTED, 100)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    t = types(sc.speak([0.9] * 6))  # the user, over the last of the answer: held
    t += types(sc.tick(2000))
    assert t.count(STARTED) == 1, "the user's next turn, once nothing plays"
    assert upstream_speech(sc, STOPPED, 101) == [STOPPED]


def test_upstream_speech_the_proxy_does_not_hear_is_dropped_with_its_stop() -> None:
    """The upstream heard the tail of the assistant's echo: nothing for the client."""
    sc = relay()
    start_response(sc, chunks=5)
    assert not upstream_speech(sc, STARTED, 100)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    assert not types(sc.tick(2000))
    assert not upstream_speech(sc, STOPPED, 101), "no end for a start never told"


def test_after_a_decided_barge_in_the_client_gets_the_proxys_start_only() -> None:
    sc = relay()
    start_response(sc, chunks=20)
    assert not upstream_speech(sc, STARTED, 100)
    t = types(sc.speak([0.9] * 24))
    assert t.count(STARTED) == 1 and "response.done" in t
    t = upstream_speech(sc, STOPPED, 101) + types(sc.tick(3000))
    assert STARTED not in t and STOPPED not in t


def test_a_moved_session_keeps_its_decision_time_and_overlap_events() -> None:
    sc = turn_based(type="server_vad", barge_in_decision_ms=450, overlap_events=True)
    snap = sc.s.snapshot()
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    moved = TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings)
    moved.restore(snap)
    assert moved.config.turn.barge_in_decision_ms == 450
    assert moved.config.turn.overlap_events is True
    assert moved.turns.decision_params().decision_ms == 450


def test_speech_much_quieter_than_the_user_is_background_and_never_cuts() -> None:
    """A television across the room: voiced, Silero says speech, 3 s of it (longer than
    min_barge_in_ms), but 12 dB below the user's own turn: loud enough for each window to
    pass as the user's, too quiet as a whole."""
    settings = ShimSettings(vad=VadParams(), echo_suppression=False, min_barge_in_ms=800)
    sc = Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))
    update = {"type": "session.update", "session": {"turn_detection": {"overlap_events": True}}}
    sc.client(update)
    run_turn(sc)  # the user's own level, learnt from their turn
    respond(sc, chunks=40)
    evs = client_events(sc.speak([0.9] * 94, peak=1000))
    t = [str(e["type"]) for e in evs]
    assert STARTED not in t and "response.done" not in t, "a GA client hears nothing of it"
    reasons = [e["reason"] for e in evs if e["type"] == "output_audio_buffer.resumed"]
    assert reasons and set(reasons) == {"background_speech"}
    assert t.count("output_audio_buffer.paused") == 1, "one pause: the run is then dismissed"
    # The user, at their own level, over the same answer: a barge-in.
    assert STARTED in types(sc.speak([0.05] * 20 + [0.9] * 30))


def first_window_of(windows: list[list[dict[str, Any]]], kind: str) -> int:
    return next(i for i, w in enumerate(windows) if any(e["type"] == kind for e in w))


def test_one_sure_window_at_the_users_level_holds_and_starts_the_decisions_clock() -> None:
    """ "Ex-cuse me": Silero is sure of the first vowel, unsure of the consonants after
    it (above its deactivation, so one run, but not speech), sure again 200 ms later.
    The answer pauses at the vowel and the decision is counted from it; one sure window
    much quieter than the user, or one Silero is unsure of, holds nothing."""
    sc = turn_based(type="server_vad", overlap_events=True)
    run_turn(sc)  # the user's own level, learnt from their turn
    respond(sc, chunks=40)
    probs = [0.97] + [0.4] * 6 + [0.97] * 30
    steps = [client_events(sc.speak([p])) for p in probs]
    assert "output_audio_buffer.paused" in [e["type"] for e in steps[0]], "held at once"
    told = first_window_of(steps, STARTED)
    assert told * 32 <= 600 + 64, "decided 600 ms after the vowel, not after the run"
    for peak, prob in ((1000, 0.97), (4000, 0.7)):
        sc = turn_based(type="server_vad", overlap_events=True)
        run_turn(sc)
        respond(sc, chunks=40)
        sc.speak([0.05] * 3)
        evs = client_events(sc.speak([prob], peak=peak) + sc.speak([0.4] * 3))
        assert "output_audio_buffer.paused" not in [e["type"] for e in evs]


def test_a_lone_window_held_as_the_answer_ends_is_no_turn_when_no_speech_goes_on() -> None:
    """One sure window holds the answer's last audio; nothing follows it and the answer
    ends: no speech is under way, so there is no turn to tell (a speech_started that no
    speech_stopped would follow); the held audio goes on."""
    sc = turn_based(type="server_vad")
    run_turn(sc)
    respond(sc, chunks=3)
    sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    out = sc.speak([0.97])
    for _ in range(30):
        out += sc.speak([0.05]) + sc.tick(0)
    t = types(out)
    assert STARTED not in t and STOPPED not in t


def _told_once_on_its_first_windows(sc: Script) -> None:
    """The voice back over the held answer: decided on its first windows, one
    speech_started and one speech_stopped, of one item."""
    out = client_events(sc.speak([0.97] * 10 + SILENCE))
    started = [e for e in out if e["type"] == STARTED]
    stopped = [e for e in out if e["type"] == STOPPED]
    assert len(started) == 1 and len(stopped) == 1
    assert started[0]["item_id"] == stopped[0]["item_id"]
    assert [e["type"] for e in out].index(STARTED) < 3, "decided on its first windows"


def test_a_sentence_resumed_after_its_opener_is_told_once() -> None:
    """ "Sorry. ... Actually, ...": the voice comes back within CARRY_MS of the opener,
    and the sentence is decided on its first window (it goes on from the opener), before
    the VAD has started its run: the client hears one speech_started and one
    speech_stopped for it, of one item."""
    sc = turn_based(type="server_vad")
    run_turn(sc)
    respond(sc, chunks=60)
    sc.speak([0.97] * 12 + [0.4] * 3 + [0.05] * 17)  # released, then the VAD stops
    _told_once_on_its_first_windows(sc)


def test_an_opener_and_its_pause_are_held_through_and_told_once() -> None:
    """ "Sorry. ... Actually, ...": the VAD stops the opener (its pause outlasts the
    silence duration), but the voice comes back within CARRY_MS of it: the answer stays
    held through the pause (it does not play into it), the sentence is decided on its
    first windows, and the client hears one speech_started and one speech_stopped for
    it, of one item."""
    sc = turn_based(type="server_vad", overlap_events=True)
    run_turn(sc)
    respond(sc, chunks=60)
    opener = client_events(sc.speak([0.97] * 12 + [0.05] * 17))
    assert [e["type"] for e in opener if e["type"].startswith("output_audio_buffer.")] == [
        "output_audio_buffer.paused"
    ], "held through the pause: the answer does not resume in it"
    _told_once_on_its_first_windows(sc)
