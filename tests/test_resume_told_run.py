"""duplex_emulated: a speech run told begun (``speech_started``) before a move is not
told begun again by the new owner; its ``speech_stopped`` comes once, for the same item.

The new owner's VAD starts afresh mid-speech; without the told run in the snapshot
it took the rest of the run for a new one (two starts, one stop: a GA client takes
each start for an interruption).
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events
from tests.turn_based_script import SILENCE, SPEECH, make, respond

SPEECH_EVENTS = ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped")


def speech(actions: list[Action]) -> list[tuple[str, str]]:
    told = [e for e in client_events(actions) if e["type"] in SPEECH_EVENTS]
    return [(e["type"].rsplit(".", 1)[1], e["item_id"]) for e in told]


def moved(sc: Script) -> Script:
    """The session carried on by another replica from its snapshot."""
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    other = Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))
    other.s.restore(sc.s.snapshot())
    other.now = sc.now
    return other


def test_a_turn_told_begun_before_a_move_is_stopped_once_after_it() -> None:
    sc = make()
    before = speech(sc.speak([0.05] * 5 + SPEECH[:10]))
    assert [kind for kind, _ in before] == ["speech_started"]
    item = before[0][1]
    other = moved(sc)
    out = other.speak(SPEECH[10:] + SILENCE)
    assert speech(out) == [("speech_stopped", item)]
    committed = [e for e in client_events(out) if e["type"] == "input_audio_buffer.committed"]
    assert [e["item_id"] for e in committed] == [item]


def test_a_turn_told_begun_and_silent_at_the_move_still_stops() -> None:
    sc = make()
    before = speech(sc.speak([0.05] * 5 + SPEECH + [0.05] * 5))  # stopping, not stopped
    item = before[0][1]
    assert [kind for kind, _ in before] == ["speech_started"]
    assert speech(moved(sc).speak(SILENCE)) == [("speech_stopped", item)]


def test_a_barge_in_told_before_a_move_is_not_told_again() -> None:
    sc = make(min_barge_in_ms=200)
    sc.speak([0.05] * 5 + SPEECH + SILENCE)
    respond(sc, chunks=30)  # 3 s of answer, playing
    told: list[tuple[str, str]] = []
    for _ in range(40):  # speech over the answer until it is a barge-in
        told += speech(sc.speak([0.9]))
        if told:
            break
    assert [kind for kind, _ in told] == ["speech_started"], told
    out = moved(sc).speak(SPEECH + SILENCE)
    assert speech(out) == [("speech_stopped", told[0][1])]


def test_no_run_told_no_run_carried() -> None:
    sc = make()
    sc.speak([0.05] * 5 + SPEECH + SILENCE)  # told and stopped before the move
    snap: dict[str, Any] = sc.s.snapshot()
    assert "speech_run" not in snap
    out = moved(sc).speak(SILENCE)
    assert not speech(out)
