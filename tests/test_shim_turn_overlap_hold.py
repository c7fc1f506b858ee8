"""duplex_emulated: the assistant's output held while user speech over it is undecided,
by script through ``handle``: released in order for a backchannel, the speech a turn of
its own once the assistant stopped, and released on a tick once too much is held."""

from __future__ import annotations

from shim.actions import Action
from tests.shim_edge_scripts import start_turn, turn_audio, turn_based
from tests.shim_script import types


def test_overlap_held_transcript_is_released_in_order_when_it_was_a_backchannel() -> None:
    sc = turn_based(min_barge_in_ms=2000)
    start_turn(sc, audio_ms=1000)
    assert not types(sc.speak([0.9] * 4)), "undecided: speech_started only for a barge-in"
    held = sc.upstream({"type": "transcription.delta", "delta": "held words"})
    held += turn_audio(sc)
    assert not types(held)
    out = sc.speak([0.05] * 20)
    t = types(out)
    assert t.index("response.output_audio_transcript.delta") < t.index(
        "response.output_audio.delta"
    )


def test_overlap_still_undecided_when_the_assistant_stops_becomes_the_next_turn() -> None:
    sc = turn_based(min_barge_in_ms=5000)
    start_turn(sc, audio_ms=300)
    done = sc.upstream({"type": "response.output_audio.done"})
    assert "response.done" in types(done)
    assert not types(sc.speak([0.9] * 4)), "undecided: speech_started only for a barge-in"
    # The 300 ms played out long ago: the speech is the user's own turn.
    assert types(sc.tick(5000)) == ["input_audio_buffer.speech_started"]
    out = sc.speak([0.05] * 20)
    assert types(out)[:2] == ["input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]


def test_too_much_held_audio_is_released_on_a_tick() -> None:
    sc = turn_based(min_barge_in_ms=5000, max_hold_ms=300)
    start_turn(sc, audio_ms=1000)
    sc.speak([0.9] * 4)
    held: list[Action] = []
    for _ in range(5):
        held += turn_audio(sc)
    assert not types(held)
    out = sc.tick(10)
    assert types(out).count("response.output_audio.delta") == 5
