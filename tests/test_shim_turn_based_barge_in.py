"""duplex_emulated by script: user speech over the answer: a barge-in cuts, cancels,
truncates and redials; a backchannel holds the audio then releases it; held audio
released without a decision; a clear during an overlap ends it."""

from __future__ import annotations

from shim.actions import AbortUpstream, SendUpstream
from tests.shim_script import client_events, types
from tests.turn_based_script import SILENCE, make, respond, run_turn


def test_barge_in_cuts_cancels_truncates_and_redials_the_upstream() -> None:
    sc = make(min_barge_in_ms=200)
    run_turn(sc)
    respond(sc, chunks=10)  # 1 s of assistant audio sent at t=now
    out = sc.speak([0.9] * 12)
    t = types(out)
    assert t[0] == "input_audio_buffer.speech_started"
    assert "response.done" in t
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
    truncated = next(e for e in client_events(out) if e["type"] == "conversation.item.truncated")
    assert isinstance(truncated["audio_end_ms"], int)
    assert 0 < truncated["audio_end_ms"] <= 1000
    aborts = [a for a in out if isinstance(a, AbortUpstream)]
    assert len(aborts) == 1 and aborts[0].redial
    idx = out.index(aborts[0])
    assert isinstance(out[idx + 1], SendUpstream) and out[idx + 1].event["type"] == "session.update"
    # Later deltas of the cancelled response never reach the client.
    assert not types(respond(sc, chunks=2))


def test_a_backchannel_holds_then_releases_the_audio_without_cancelling() -> None:
    sc = make(min_barge_in_ms=400)
    run_turn(sc)
    respond(sc, chunks=5)
    out = sc.speak([0.9] * 8)  # 256 ms "uh-huh": over by the decision
    assert not types(out), "a GA client hears nothing of an undecided overlap"
    held = respond(sc, chunks=3)
    assert not types(held), "assistant audio is held while the overlap is undecided"
    out = sc.speak(SILENCE + [0.05] * 4)  # held through a pause the voice may end (700 ms)
    t = types(out)
    assert "input_audio_buffer.speech_started" not in t
    assert "input_audio_buffer.speech_stopped" not in t, "no end for a start never told"
    assert t.count("response.output_audio.delta") == 3, "held audio is released, none lost"
    assert "response.done" not in t


def test_audio_held_too_long_is_released_without_a_decision() -> None:
    sc = make(min_barge_in_ms=60_000, decision_ms=3000)  # the overlap never cuts
    run_turn(sc)
    respond(sc, chunks=5)
    assert not types(sc.speak([0.9] * 8))
    assert not types(respond(sc, chunks=31)), "3.1 s held: more than max_hold_ms"
    released = types(sc.tick(32))
    assert released.count("response.output_audio.delta") == 31
    assert "response.done" not in released and "input_audio_buffer.speech_stopped" not in released
    assert types(respond(sc, chunks=1)) == [
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
    ], "output flows again"


def test_clearing_the_input_during_an_overlap_ends_it_and_output_flows() -> None:
    sc = make(min_barge_in_ms=60_000, decision_ms=3000)
    run_turn(sc)
    respond(sc, chunks=5)
    assert not types(sc.speak([0.9] * 8))
    held = respond(sc, chunks=2)
    assert not types(held)
    cleared = types(sc.client({"type": "input_audio_buffer.clear"}))
    assert cleared[-1] == "input_audio_buffer.cleared"
    assert cleared.count("response.output_audio.delta") == 2, "what was held goes on"
    assert "response.output_audio.delta" in types(respond(sc, chunks=1))
