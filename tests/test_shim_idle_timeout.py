"""GA server VAD's ``idle_timeout_ms`` by script: time is an input, nothing waits.

``duplex_emulated`` keeps it (the proxy takes the turns: ``shim/idle_timeout.py``,
``shim/dialects/turn_idle.py``); the relays, whose upstream takes the turns, tell it
back as they behave: null, and nothing fires.
"""

from __future__ import annotations

from typing import Any

import pybase64
import pytest
from openai.types.realtime import InputAudioBufferTimeoutTriggered

from shim.dialects.ga_relay import GaRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.idle_timeout import IdleStretch, IdleTimer
from shim.session import EmulatedSession, ShimSettings
from shim.session_config import IDLE_PARAM
from tests.shim_idle_script import QUIET, SID, SILENCE, SPEECH, told_td, turn_based, update, wait
from tests.shim_script import Script, client_events, pcm_b64, types, upstream_events


def answered_turn(sc: Script, audio_ms: int = 1000) -> list[Any]:
    """A user turn, and an answer with ``audio_ms`` of audio sent at once."""
    out = sc.speak(QUIET + SPEECH + SILENCE)
    assert "response.created" in types(out)
    for _ in range(audio_ms // 100):
        out += sc.upstream({"type": "response.output_audio.delta", "audio": pcm_b64(100, 24000)})
    out += sc.upstream({"type": "transcription.done", "text": "hello"})
    return out + sc.upstream({"type": "response.output_audio.done"})


def test_the_timer_runs_only_after_something_happened_and_fires_once() -> None:
    timer = IdleTimer()
    assert timer.step(0, 5000, True, 0, None) is None
    assert timer.step(60_000, 5000, True, 60_000, None) is None, "no turn yet: nothing to time"
    assert timer.step(61_000, 5000, False, 61_000, "a") is None  # an answer plays
    assert timer.step(62_000, 5000, True, 62_000, "a") is None  # played out: the timer starts
    assert timer.deadline(5000) == 67_000
    assert timer.step(66_999, 5000, True, 66_999, "a") is None
    assert timer.step(67_000, 5000, True, 66_990, "a") == IdleStretch(62_000, 66_990)
    assert timer.deadline(5000) is None
    assert timer.step(90_000, 5000, True, 90_000, "a") is None, "once per quiet stretch"
    # A new turn between two looks starts the quiet again, from the look that sees it.
    assert timer.step(91_000, 5000, True, 91_000, "b") is None
    assert timer.step(95_999, 5000, True, 95_999, "b") is None
    assert timer.step(96_000, None, True, 96_000, "b") is None, "turned off"
    assert timer.deadline(None) is None
    assert timer.step(97_000, 5000, False, 97_000, "b") is None  # user speech
    timer.step(98_000, 5000, True, 98_000, "b")
    assert timer.deadline(5000) == 103_000


def test_silence_after_the_answer_played_is_a_turn_told_committed_and_answered() -> None:
    sc = turn_based(5000)
    answered_turn(sc, audio_ms=1000)
    played_out_at = sc.now + 1000  # the clock's estimate: sent at once, 1 s long
    out = wait(sc, 1000 + 4800)
    assert "input_audio_buffer.timeout_triggered" not in types(out)
    due = sc.s.due_at()
    assert due is not None and played_out_at <= due - 5000 <= played_out_at + 96
    out = wait(sc, 480)
    assert types(out)[:5] == [
        "input_audio_buffer.timeout_triggered",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
    ]
    told = client_events(out)[0]
    InputAudioBufferTimeoutTriggered.model_validate({**told, "event_id": "event_1"})
    # The silent stretch of input: from the answer's end to now, about the timeout long.
    assert abs(told["audio_end_ms"] - told["audio_start_ms"] - 5000) <= 100
    assert told["audio_end_ms"] <= sc.vad_end * 1000 // 16000
    assert client_events(out)[1]["item_id"] == told["item_id"]
    up = upstream_events(out)
    assert up[0] == {"type": "input_audio_buffer.commit", "final": False}
    assert up[-1] == {"type": "input_audio_buffer.commit", "final": True}
    sent = b"".join(
        pybase64.b64decode(e["audio"]) for e in up if e["type"] == "input_audio_buffer.append"
    )
    # What the proxy still keeps of the stretch (its end: kept between turns) goes upstream.
    assert 16 * 1000 <= len(sent) // 2 <= 16 * 5000 and not any(sent)
    assert sc.s.due_at() is None, "the answer it brought must play out first"


def test_a_client_that_sends_no_audio_still_gets_its_timeout_and_the_upstream_a_turn() -> None:
    sc = turn_based(5000)
    answered_turn(sc, audio_ms=500)
    out = sc.tick(600) + sc.tick(4900)
    assert "input_audio_buffer.timeout_triggered" not in types(out)
    out = sc.tick(200)
    assert types(out)[0] == "input_audio_buffer.timeout_triggered"
    told = client_events(out)[0]
    assert told["audio_start_ms"] == told["audio_end_ms"]
    appends = [e for e in upstream_events(out) if e["type"] == "input_audio_buffer.append"]
    assert appends, "the upstream takes no empty turn: a short silence goes"


def test_user_speech_before_the_timeout_is_a_turn_and_the_timer_starts_again() -> None:
    sc = turn_based(5000)
    answered_turn(sc)
    out = wait(sc, 1000 + 3000)
    out += sc.speak(SPEECH + SILENCE)
    out += sc.tick(0)
    assert "input_audio_buffer.timeout_triggered" not in types(out)
    assert "input_audio_buffer.speech_started" in types(out)
    assert sc.s.due_at() is None, "an answer is on its way"


def test_no_timeout_without_it_before_any_turn_or_under_push_to_talk() -> None:
    sc = turn_based(None)
    answered_turn(sc)
    assert "input_audio_buffer.timeout_triggered" not in types(wait(sc, 40_000, 960))
    fresh = turn_based(5000)
    assert "input_audio_buffer.timeout_triggered" not in types(wait(fresh, 40_000, 960))
    ptt = turn_based(5000)
    answered_turn(ptt)
    assert told_td(ptt.client(update(None))) is None
    assert "input_audio_buffer.timeout_triggered" not in types(wait(ptt, 40_000, 960))


@pytest.mark.parametrize(
    "td",
    [
        {"type": "server_vad", "idle_timeout_ms": 4999},
        {"type": "server_vad", "idle_timeout_ms": 30_001},
        {"type": "server_vad", "idle_timeout_ms": 5000.5},
        {"type": "server_vad", "idle_timeout_ms": True},
        {"type": "server_vad", "idle_timeout_ms": "6000"},
        {"type": "semantic_vad", "idle_timeout_ms": 6000},
    ],
)
def test_a_value_outside_ga_s_range_is_refused_coded_and_changes_nothing(
    td: dict[str, Any],
) -> None:
    sc = turn_based(7000)
    out = sc.client(update(td))
    (error,) = [e["error"] for e in client_events(out) if e["type"] == "error"]
    assert error["code"] == "invalid_value"
    assert error["param"] == "turn_detection.idle_timeout_ms"
    assert sc.s.config.turn.idle_timeout_ms == 7000


def test_an_update_without_it_keeps_it_null_clears_it_and_a_snapshot_carries_it() -> None:
    sc = turn_based(7000)
    assert (
        told_td(sc.client(update({"type": "server_vad", "threshold": 0.6})))["idle_timeout_ms"]
        == 7000
    )
    moved = TurnBasedSession(SID, "demo", "demo-up", ShimSettings())
    moved.restore(sc.s.snapshot())
    assert moved.config.turn.idle_timeout_ms == 7000
    cleared = sc.client(update({"type": "server_vad", "idle_timeout_ms": None}))
    assert told_td(cleared)["idle_timeout_ms"] is None


def relay() -> EmulatedSession:
    return GaRelaySession(SID, "m", ShimSettings(), {"supports_barge_in": True})


def test_where_the_upstream_takes_the_turns_it_alone_is_refused_and_never_fires() -> None:
    sc = Script(relay())
    asks = update({"type": "server_vad", "silence_duration_ms": 700, "idle_timeout_ms": 5000})
    out = sc.client(asks)
    errors = [e for e in client_events(out) if e["type"] == "error"]
    assert [(e["error"]["code"], e["error"]["param"]) for e in errors] == [
        ("unsupported_by_upstream", IDLE_PARAM)
    ]
    # The rest of the update applies, told back and sent upstream without it.
    assert told_td(out)["silence_duration_ms"] == 700
    assert told_td(out)["idle_timeout_ms"] is None
    up = [e for e in upstream_events(out) if e["type"] == "session.update"]
    assert up and up[0]["session"]["turn_detection"]["silence_duration_ms"] == 700
    assert all("idle_timeout_ms" not in str(e) for e in up), "nothing GA-only goes upstream"
    assert sc.s.config.turn.idle_timeout_ms is None
    assert sc.s.due_at() is None
    # Null asks for nothing: applied, told back null.
    out = sc.client(update({"type": "server_vad", "idle_timeout_ms": None}))
    assert not [e for e in client_events(out) if e["type"] == "error"]
    assert told_td(out)["idle_timeout_ms"] is None
    # Still checked: a bad value refuses the update in the same words as elsewhere.
    bad = sc.client(update({"type": "server_vad", "idle_timeout_ms": 100}))
    assert [e["error"]["code"] for e in client_events(bad)] == ["invalid_value"]
    assert not upstream_events(bad)


def test_a_turn_left_unanswered_under_create_response_false_is_answered_with_the_silence() -> None:
    sc = turn_based(5000)
    sc.client(update({"type": "server_vad", "create_response": False}))
    out = sc.speak(QUIET + SPEECH + SILENCE)
    assert "input_audio_buffer.committed" in types(out)
    assert "response.created" not in types(out)
    out = wait(sc, 5000 + 200)
    assert types(out)[:5] == [
        "input_audio_buffer.timeout_triggered",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
    ]
    assert types(out).count("response.created") == 1, "one answer for the turn and the silence"
