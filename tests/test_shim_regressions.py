"""Bugs the stateful properties found, as explicit cases
(``tests/test_shim_stateful_turn_based.py``, ``tests/test_shim_stateful_relay.py``).

Each was found failing; kept so it stays fixed. Driven only through ``handle`` and its
actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pybase64
import pytest

from shim.actions import Action
from shim.audio import b64encode
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent, UpstreamEvent, VadWindow
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events, pcm_b64, upstream_events

SID = "sess_0123456789abcdef"
SETTINGS = ShimSettings(vad=VadParams(), min_barge_in_ms=800, echo_suppression=False)
PUSH_TO_TALK = {
    "type": "session.update",
    "session": {"audio": {"input": {"turn_detection": None}}},
}


def turn_based_responding() -> tuple[Script, str]:
    """duplex_emulated with a response under way (500 ms of its audio sent)."""
    sc = Script(TurnBasedSession(SID, "m", "u", SETTINGS))
    out = sc.speak([0.05] * 5 + [0.9] * 20 + [0.05] * 20)
    (created,) = [e for e in client_events(out) if e["type"] == "response.created"]
    turn_audio(sc, 500)
    return sc, created["response"]["id"]


def turn_audio(sc: Script, ms: int) -> list[Action]:
    return sc.upstream(
        {
            "type": "response.output_audio.delta",
            "audio": pcm_b64(ms, 24000),
            "sample_rate_hz": 24000,
        }
    )


def relay_responding() -> tuple[Script, str]:
    """barge_in_emulated with a response under way (500 ms of its audio sent)."""
    sc = Script(BargeInRelaySession(SID, "m", SETTINGS, {"supports_barge_in": False}))
    sc.upstream({"type": "response.created", "response": {"id": "r1", "status": "in_progress"}})
    relay_audio(sc, 500)
    return sc, "r1"


def relay_audio(sc: Script, ms: int) -> list[Action]:
    return sc.upstream(
        {
            "type": "response.output_audio.delta",
            "response_id": "r1",
            "item_id": "i1",
            "delta": pcm_b64(ms, 24000),
            "sample_rate_hz": 24000,
        }
    )


def finish(sc: Script, relay: bool) -> list[Action]:
    if relay:
        return sc.upstream(
            {"type": "response.done", "response": {"id": "r1", "status": "completed"}}
        )
    return sc.upstream({"type": "response.output_audio.done", "has_audio": True})


def dones(events: list[dict[str, Any]], rid: str) -> int:
    return sum(1 for e in events if e["type"] == "response.done" and e["response"]["id"] == rid)


@pytest.mark.parametrize("dialect", ["turn_based", "relay"])
def test_turning_vad_off_during_an_overlap_does_not_hold_the_response_forever(
    dialect: str,
) -> None:
    relay = dialect == "relay"
    sc, rid = relay_responding() if relay else turn_based_responding()
    out = sc.speak([0.9] * 4)  # the user talks over it: output is held, undecided
    assert not client_events(out), "speech_started only once it is decided a barge-in"
    out = relay_audio(sc, 300) if relay else turn_audio(sc, 300)
    assert not client_events(out), "held while the overlap is undecided"
    out = sc.client(PUSH_TO_TALK)
    out += finish(sc, relay)
    out += sc.speak([0.0] * 40)  # the user falls silent
    out += sc.tick(60_000)
    out += sc.tick(60_000)
    assert dones(client_events(out), rid) == 1


def test_clear_during_an_overlap_keeps_the_assistant_audio_in_order() -> None:
    sc, rid = turn_based_responding()
    sc.speak([0.9] * 4)  # overlap: output held
    assert not client_events(turn_audio(sc, 3500)), "held while the overlap is undecided"
    events = client_events(sc.client({"type": "input_audio_buffer.clear"}))
    events += client_events(turn_audio(sc, 100))
    events += client_events(finish(sc, relay=False))
    events += client_events(sc.tick(100))
    kinds = [e["type"] for e in events if e.get("response_id") == rid or e.get("response")]
    assert "response.done" in kinds
    after_done = kinds[kinds.index("response.done") + 1 :]
    assert not after_done, f"events after response.done: {after_done}"
    deltas = [e for e in events if e["type"] == "response.output_audio.delta"]
    assert len(deltas) == 2 and len(deltas[0]["delta"]) > len(deltas[1]["delta"]), (
        "the held 3.5 s delta comes before the later 100 ms one"
    )


def test_a_long_push_to_talk_turn_reaches_the_upstream_whole() -> None:
    sc = Script(TurnBasedSession(SID, "m", "u", SETTINGS))
    sc.client(PUSH_TO_TALK)
    for _ in range(10):
        sc.audio(1000, amplitude=1000)
    committed = client_events(sc.client({"type": "input_audio_buffer.commit"}))
    assert committed[0]["type"] == "input_audio_buffer.committed"
    out = sc.client({"type": "response.create"})
    sent = b"".join(
        pybase64.b64decode(e["audio"])
        for e in upstream_events(out)
        if e["type"] == "input_audio_buffer.append"
    )
    assert len(sent) // 2 >= 16_000 * 10 - 16 * 40  # 10 s at 16 kHz, give or take 40 ms


@pytest.mark.parametrize("dialect", ["turn_based", "relay"])
def test_a_barge_in_on_a_finished_response_still_playing_does_not_end_it_twice(
    dialect: str,
) -> None:
    relay = dialect == "relay"
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    if relay:
        sc = Script(BargeInRelaySession(SID, "m", settings, {"supports_barge_in": False}))
        sc.upstream({"type": "response.created", "response": {"id": "r1"}})
        rid = "r1"
        for _ in range(4):
            relay_audio(sc, 500)
    else:
        sc = Script(TurnBasedSession(SID, "m", "u", settings))
        out = sc.speak([0.05] * 5 + [0.9] * 20 + [0.05] * 20)
        (created,) = [e for e in client_events(out) if e["type"] == "response.created"]
        rid = created["response"]["id"]
        turn_audio(sc, 2000)
    events = client_events(finish(sc, relay))
    assert dones(events, rid) == 1
    events = client_events(sc.speak([0.9] * 12))  # talking over its last 1.6 s
    assert any(e["type"] == "conversation.item.truncated" for e in events), "cut as heard"
    assert dones(events, rid) == 0, "it already ended"


def _speak(
    session: TurnBasedSession, clock: dict[str, float], prob: float, count: int, amp: int
) -> list[Action]:
    rate = session.config.input_format.rate_hz
    chunk = b64encode((np.ones(rate * 32 // 1000) * amp).astype("<i2").tobytes())
    out: list[Action] = []
    for _ in range(count):
        clock["now"] += 32
        clock["vad_end"] += 512
        event = {"type": "input_audio_buffer.append", "audio": chunk}
        out += session.handle(ClientEvent(event, "", clock["now"]))
        out += session.handle(VadWindow(prob, int(clock["vad_end"]), clock["now"]))
    return out


def test_digital_silence_after_an_echo_lock_is_handled() -> None:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=True)
    session = TurnBasedSession(SID, "demo", "demo-up", settings)
    clock = {"now": 0.0, "vad_end": 0.0}

    def exchange(chunks: int, audio_ms: int, finish: bool) -> None:
        _speak(session, clock, 0.9, 20, 8000)
        _speak(session, clock, 0.02, 20, 10)
        for _ in range(chunks):
            clock["now"] += 5
            delta = {"type": "transcription.delta", "delta": "word "}
            session.handle(UpstreamEvent(delta, "", clock["now"]))
            audio = {
                "type": "response.output_audio.delta",
                "audio": pcm_b64(audio_ms, 24000, 3000),
                "sample_rate_hz": 24000,
            }
            session.handle(UpstreamEvent(audio, "", clock["now"]))
        if finish:
            done = {"type": "response.output_audio.done"}
            session.handle(UpstreamEvent(done, "", clock["now"]))

    exchange(5, 304, finish=False)
    exchange(5, 23, finish=True)
    rate16k = {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}
    session.handle(ClientEvent({"type": "session.update", "session": rate16k}, "", clock["now"]))
    out = _speak(session, clock, 0.0, 40, 0)  # a muted microphone: exact zeros
    failures = [e for e in client_events(out) if e["type"] == "error"]
    assert not failures, failures


def test_a_new_upstream_response_during_a_hold_does_not_lose_the_previous_end() -> None:
    sc = Script(BargeInRelaySession(SID, "m", SETTINGS, {"supports_barge_in": False}))
    events: list[dict[str, Any]] = []

    def up(event: dict[str, Any]) -> None:
        events.extend(client_events(sc.upstream(event)))

    def audio(rid: str, ms: int) -> None:
        up(
            {
                "type": "response.output_audio.delta",
                "response_id": rid,
                "item_id": f"item_{rid}",
                "delta": pcm_b64(ms, 24000),
                "sample_rate_hz": 24000,
            }
        )

    up({"type": "response.created", "response": {"id": "r1"}})
    audio("r1", 1000)
    events += client_events(sc.speak([0.9] * 4))  # overlap: r1's output is held
    audio("r1", 200)
    up({"type": "response.done", "response": {"id": "r1", "status": "completed"}})
    up({"type": "response.created", "response": {"id": "r2"}})
    audio("r2", 200)
    up({"type": "response.done", "response": {"id": "r2", "status": "completed"}})
    events += client_events(sc.speak([0.0] * 30))  # a backchannel: it stops
    events += client_events(sc.tick(60_000))
    assert dones(events, "r1") == 1
    kinds = [(e["type"], e.get("response", {}).get("id")) for e in events]
    assert kinds.index(("response.done", "r1")) < kinds.index(("response.created", "r2"))
