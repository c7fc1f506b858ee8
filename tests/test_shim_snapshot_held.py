"""A snapshot taken while the assistant's output is held (an overlap undecided) after
the upstream finished the response: its closing events are held too, so the response
is no longer produced but the client has not had it all. A move must still end it
(``open_response`` in ``shim/session.py``): exactly one response.done for it."""

from __future__ import annotations

from typing import Any

import pytest

from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.duplex_relay_script import AID, RID, start_response
from tests.shim_overlap_sessions import relay, turn_based
from tests.shim_script import Script, client_events, pcm_b64, types
from tests.turn_based_script import NATIVE_OPEN, make, respond, run_turn

CAPS = {"supports_barge_in": False}


def _moved_done(sc: Script) -> tuple[str, list[dict[str, Any]]]:
    """The response's id, and what a session restored from its snapshot tells."""
    rid = sc.s.output.response.response_id
    snap = sc.s.snapshot()
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    moved = TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings)
    return rid, client_events(moved.restore(snap))


def _done_held(sc: Script) -> None:
    out = sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    assert sc.s.overlap.holding and "response.done" not in types(out)
    assert not sc.s.output.response.producing


def _one_done_for(rid: str, told: list[dict[str, Any]]) -> None:
    done = [e for e in told if e["type"] == "response.done"]
    assert [e["response"]["id"] for e in done] == [rid], told
    assert done[0]["response"]["status"] == "incomplete", done


def _held_then_moved(sc: Script, speech: list[float]) -> None:
    """An answer under way, ``speech`` over it (held), more of the answer and its end
    held too, then a move: exactly one response.done for it."""
    run_turn(sc)
    respond(sc, chunks=10)
    sc.speak(speech)
    respond(sc, chunks=5)  # held
    _done_held(sc)
    _one_done_for(*_moved_done(sc))


THROUGH_THE_PAUSE = [0.97] * 12 + [0.05] * 17  # the VAD stopped; held through the pause
MID_SPEECH = [0.97] * 6  # held, undecided


@pytest.mark.parametrize("speech", [THROUGH_THE_PAUSE, MID_SPEECH], ids=["pause", "mid_speech"])
def test_held_with_the_upstream_done_ends_on_restore(speech: list[float]) -> None:
    _held_then_moved(turn_based(type="server_vad"), speech)


def test_native_client_held_with_the_upstream_done_ends_on_restore() -> None:
    sc = make(min_barge_in_ms=60_000)
    sc.client(NATIVE_OPEN)
    sc.rate = sc.s.config.input_format.rate_hz  # 16 kHz native appends
    sc.client({"type": "session.update", "session": {"turn_detection": {"type": "server_vad"}}})
    _held_then_moved(sc, MID_SPEECH)


def test_a_response_told_done_is_not_ended_again_on_restore() -> None:
    sc = turn_based(type="server_vad")
    run_turn(sc)
    respond(sc, chunks=5)
    out = sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    assert "response.done" in types(out)
    _, told = _moved_done(sc)
    assert "response.done" not in [e["type"] for e in told], told


def test_relay_held_with_the_upstream_done_ends_on_a_fresh_upstream() -> None:
    """barge_in_emulated: the same hold, restored where the upstream session is gone."""
    sc = relay()
    start_response(sc, chunks=10)
    sc.speak([0.97] * 6)  # undecided: what comes now is held
    out = []
    for seq in range(31, 36):
        delta = {"type": "response.output_audio.delta", "response_id": RID, "item_id": AID}
        out += sc.upstream(delta | {"delta": pcm_b64(100, 22050), "server_event_seq": seq})
    out += sc.upstream(
        {"type": "response.output_audio.done", "response_id": RID, "server_event_seq": 36}
    )
    out += sc.upstream(
        {"type": "response.done", "response": {"id": RID, "status": "completed"}}
        | {"server_event_seq": 37}
    )
    assert sc.s.overlap.holding and "response.done" not in types(out)
    snap = sc.s.snapshot()
    settings = ShimSettings(vad=VadParams(), echo_suppression=False, min_barge_in_ms=60_000)
    moved = BargeInRelaySession("sess_0123456789abcdef", "m", settings, CAPS)
    _one_done_for(RID, client_events(moved.restore(snap)))
