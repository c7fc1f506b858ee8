"""A fresh upstream session of the barge-in relay gets every setting the client's
updates gave the one before, not only the last update's (``shim/dialects/
relay_kept_update.py``): vLLM-Omni applies each update over the session it has
(``engine/duplex/config.py``, ``apply_realtime_update``), so after a lost upstream or a
move to another replica the new one is given them all, folded into one update."""

from __future__ import annotations

import types as modules
from typing import Any

import pytest

from shim import snapshot
from shim.actions import Action
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.inputs import UpstreamLost
from tests.shim_script import Script, client_events, upstream_events
from tests.test_native_g711_rates import wheel_session
from tests.test_shim_duplex_relay import make
from tests.test_shim_ga_relay import make as make_ga

__all__ = ["wheel_session"]

VAD = {"type": "server_vad", "silence_duration_ms": 400}


def updated(sc: Script, *sessions: dict[str, Any]) -> None:
    for session in sessions:
        out = sc.client({"type": "session.update", "session": session})
        assert not [e for e in client_events(out) if e["type"] == "error"], out


def given(out: list[Action]) -> dict[str, Any]:
    """The session a fresh upstream is given."""
    (restore,) = [e for e in upstream_events(out) if e["type"] == "session.update"]
    session: dict[str, Any] = restore["session"]
    return session


def lost(sc: Script) -> dict[str, Any]:
    """The upstream is lost for good: the session the fresh one is given."""
    return given(sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False)))


def test_a_fresh_upstream_gets_the_settings_of_every_update() -> None:
    sc = make()
    updated(
        sc,
        {"instructions": "Be brief.", "turn_detection": VAD, "extra_body": {"a": 1}},
        {"voice": "alloy", "extra_body": {"b": 2}},
        {"tools": [], "instructions": None},
        {"instructions": "Be kind."},
    )
    session = lost(sc)
    assert session["instructions"] == "Be kind."
    assert session["voice"] == "alloy"
    assert session["tools"] == []
    assert session["turn_detection"] == VAD
    assert session["extra_body"] == {"a": 1, "b": 2}  # merged into, as vLLM-Omni does


def test_an_update_naming_the_turn_detection_anywhere_replaces_it() -> None:
    sc = make()
    updated(
        sc,
        {"turn_detection": VAD, "overlap_policy": "barge_in_on_speech", "instructions": "x"},
        {"audio": {"input": {"turn_detection": None}}},
    )
    session = lost(sc)
    assert "turn_detection" not in session and "overlap_policy" not in session, session
    assert session["audio"]["input"]["turn_detection"] is None
    assert session["instructions"] == "x"


@pytest.mark.parametrize(
    "updates",
    [
        [
            {"input_audio_format": "g711_ulaw", "sample_rate_hz": 8000},
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
        ],
        [{"sample_rate_hz": 24000}, {"input_audio_format": "pcm16"}, {"instructions": "x"}],
        [
            {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}},
            {"audio": {"input": {"sample_rate_hz": 16000}}},
        ],
        [
            {"audio": {"output": {"format": {"type": "audio/g711_alaw"}}}},
            {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}},
            {"instructions": "x"},
        ],
    ],
)
def test_the_given_formats_read_as_the_updates_did(
    wheel_session: modules.ModuleType, updates: list[dict[str, Any]]
) -> None:
    """Read by vLLM-Omni's own reader, the one update a fresh upstream gets declares
    the formats and rates the updates, one after the other, did."""
    sc = make()
    updated(sc, *updates)
    stepwise = wheel_session.RealtimeInputDefaults()
    for each in updates:
        stepwise = stepwise.with_session_payload(each)
    once = wheel_session.RealtimeInputDefaults().with_session_payload(lost(sc))
    assert once == stepwise


def test_a_move_opens_the_fresh_upstream_with_every_setting() -> None:
    """A replica that takes the session over opens its fresh upstream session with the
    snapshot's settings (``shim/snapshot.py``, ``opening_session``), and gives them
    again after a loss of its own."""
    sc = make()
    updated(sc, {"instructions": "Be brief.", "turn_detection": VAD}, {"voice": "alloy"})
    wire = sc.s.snapshot()
    opening = snapshot.opening_session(wire)
    assert opening is not None
    assert (opening["instructions"], opening["voice"]) == ("Be brief.", "alloy")
    assert opening["turn_detection"] == VAD
    taken = make(bound=False)
    assert isinstance(taken.s, BargeInRelaySession)
    taken.s.restore(wire)
    updated(taken, {"tools": []})
    session = lost(taken)
    assert (session["instructions"], session["voice"], session["tools"]) == (
        "Be brief.",
        "alloy",
        [],
    )


def test_a_ga_clients_fresh_upstream_gets_the_settings_of_every_update() -> None:
    sc = make_ga()
    updated(sc, {"type": "realtime", "instructions": "Be brief."})
    updated(sc, {"type": "realtime", "audio": {"output": {"voice": "alloy"}}})
    session = lost(sc)
    assert session["instructions"] == "Be brief."
    assert session["audio"]["output"]["voice"] == "alloy"
    assert session["turn_detection"]["type"] == "server_vad"
