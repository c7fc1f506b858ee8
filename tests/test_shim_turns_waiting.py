"""No committed user turn is lost over a turn-based upstream, by script
(``shim/dialects/turn_answer.py``): however many a GA client commits before its
``response.create``, the one response hears them all; past ``max_turn_ms`` of
waiting audio the oldest goes, said so with a code."""

from __future__ import annotations

import pybase64

from shim.dialects.turn_answer import TOO_LONG
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events, upstream_events


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
