"""No committed user turn is lost over a turn-based upstream, by script
(``shim/dialects/turn_answer.py``): however many a GA or native client commits before
its ``response.create``, the one response hears them all, none refused; past
``max_turn_ms`` of waiting audio the oldest goes, said so with a code."""

from __future__ import annotations

import pybase64
import pytest

from shim.actions import Action
from shim.dialects.turn_answer import TOO_LONG
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_edge_scripts import TURN, start_turn
from tests.shim_script import Script, client_events, types, upstream_events


def make(max_turn_ms: int = 60_000) -> Script:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False, max_turn_ms=max_turn_ms)
    sc = Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))
    sc.client(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
        }
    )
    return sc


def sent_ms(events: list[dict[str, object]]) -> int:
    """The audio the upstream got, at its 16 kHz PCM16."""
    appends = [e for e in events if e["type"] == "input_audio_buffer.append"]
    return sum(len(pybase64.b64decode(str(e["audio"]))) for e in appends) // 32


def test_six_pressed_turns_then_one_create_send_all_six_upstream() -> None:
    sc = make()
    for _ in range(6):
        sc.audio(500, amplitude=500)
        out = sc.client({"type": "input_audio_buffer.commit"})
        assert "error" not in [e["type"] for e in client_events(out)], out
    out = sc.client({"type": "response.create"})
    assert abs(sent_ms(upstream_events(out)) - 6 * 500) <= 10  # (resampling edges)
    assert [e["type"] for e in client_events(out)].count("response.created") == 1


def test_waiting_turns_past_the_longest_turn_lose_their_oldest_audio_said_so() -> None:
    sc = make(max_turn_ms=1200)
    codes = []
    for _ in range(3):
        sc.audio(500, amplitude=500)
        out = sc.client({"type": "input_audio_buffer.commit"})
        codes += [e["error"]["code"] for e in client_events(out) if e["type"] == "error"]
    assert codes == [TOO_LONG]
    out = sc.client({"type": "response.create"})
    assert abs(sent_ms(upstream_events(out)) - 1200) <= 10


def test_turns_answered_as_one_are_no_longer_than_the_longest_turn() -> None:
    """Turns committed over an answer with ``interrupt_response: false`` wait apart, each
    for its own answer; a ``response.create`` after a cancel answers them as one, and
    that one too loses its oldest audio past ``max_turn_ms``, said so."""
    sc = make(max_turn_ms=1500)
    vad = {"type": "server_vad", "interrupt_response": False}
    sc.client({"type": "session.update", "session": {"audio": {"input": {"turn_detection": vad}}}})
    start_turn(sc, audio_ms=200)
    sc.tick(10_000)
    for _ in range(3):  # 940 ms each
        out = sc.speak(TURN)
        assert "response.created" not in types(out)
        assert "error" not in types(out), client_events(out)
    assert "response.done" in types(sc.client({"type": "response.cancel"}))
    out = sc.client({"type": "response.create"})
    codes = [e["error"]["code"] for e in client_events(out) if e["type"] == "error"]
    assert codes == [TOO_LONG]
    assert abs(sent_ms(upstream_events(out)) - 1500) <= 10
    assert [e["type"] for e in client_events(out)].count("response.created") == 1


def native(max_turn_ms: int = 60_000) -> Script:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False, max_turn_ms=max_turn_ms)
    return Script(TurnBasedSession("sess_0123456789abcdef", "m", "m-up", settings, True))


def answer_done(sc: Script) -> int:
    """The answer in progress completes; the audio of the next turn it starts, in ms."""
    return sent_ms(upstream_events(sc.upstream({"type": "response.output_audio.done"})))


def only_committed(out: list[Action]) -> bool:
    """A commit taken and told, nothing refused and no answer started."""
    told = types(out)
    return told.count("input_audio_buffer.committed") == 1 and not {
        "error",
        "response.created",
    } & set(told)


def test_a_native_clients_pressed_turns_are_one_turn_for_its_response_create() -> None:
    """vLLM-Omni's runner merges the audio of every commit not yet answered into one
    turn (``engine/duplex/session/runner.py``, ``_flush_and_submit_committed_turn``)
    and its count of pending commits goes down as the runner takes each: five commits
    asking for no answer are all taken, none refused, and one ``response.create``
    answers all their audio."""
    sc = native()
    for i in range(5):
        sc.audio(500, amplitude=500)
        out = sc.client({"type": "input_audio_buffer.commit", "event_id": f"evt_{i}"})
        assert only_committed(out), client_events(out)
    out = sc.client({"type": "response.create"})
    assert types(out).count("response.created") == 1, client_events(out)
    assert "error" not in types(out), client_events(out)
    assert abs(sent_ms(upstream_events(out)) - 5 * 500) <= 10


def test_native_commits_over_an_answer_are_one_turn_answered_as_the_last_asks() -> None:
    """Commits over an answer in progress are merged into one deferred turn, answered
    when that answer ends if the last of them asked (vLLM-Omni's
    ``_defer_commit_behind_active_response`` keeps the last ``response_create``)."""
    sc = native()
    ask = {"type": "input_audio_buffer.commit", "response_create": True}
    sc.audio(500, amplitude=500)
    assert "response.created" in types(sc.client(ask))  # answered at once
    for i in range(5):  # over the answer: they wait, as one
        sc.audio(500, amplitude=500)
        out = sc.client({**ask, "event_id": f"evt_{i}"})
        assert only_committed(out), client_events(out)
    assert answer_done(sc) == pytest.approx(2500, abs=10)  # all five, in one answer
    sc.audio(300, amplitude=500)
    assert only_committed(sc.client(ask))
    sc.audio(400, amplitude=500)  # the last asks for none: the turn waits
    assert only_committed(sc.client({"type": "input_audio_buffer.commit"}))
    assert answer_done(sc) == 0
    out = sc.client({"type": "response.create"})
    assert abs(sent_ms(upstream_events(out)) - 700) <= 10


def test_a_native_clients_waiting_turn_is_no_longer_than_the_longest_turn() -> None:
    sc = native(max_turn_ms=1200)
    codes = []
    for _ in range(3):
        sc.audio(500, amplitude=500)
        out = sc.client({"type": "input_audio_buffer.commit"})
        codes += [e["error"]["code"] for e in client_events(out) if e["type"] == "error"]
    assert codes == [TOO_LONG]
    out = sc.client({"type": "response.create"})
    assert abs(sent_ms(upstream_events(out)) - 1200) <= 10


def test_a_ga_turn_with_four_turns_waiting_joins_the_newest() -> None:
    """A GA client's turns are never refused for waiting: a fifth joins the newest."""
    sc = make()
    vad = {"type": "server_vad", "interrupt_response": False}
    sc.client({"type": "session.update", "session": {"audio": {"input": {"turn_detection": vad}}}})
    start_turn(sc, audio_ms=200)
    sc.tick(10_000)
    for _ in range(5):
        out = sc.speak(TURN)
        assert "input_audio_buffer.committed" in types(out)
        assert "error" not in types(out), client_events(out)
    assert "response.done" in types(sc.client({"type": "response.cancel"}))
    out = sc.client({"type": "response.create"})
    assert abs(sent_ms(upstream_events(out)) - 5 * 940) <= 10
