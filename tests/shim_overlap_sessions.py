"""The sessions the overlap-protocol tests drive by script (``docs/protocol.md``, "Overlap
protocol"): duplex_emulated over a turn-based upstream and the barge-in relay over a
duplex upstream that cannot barge in, neither cutting the answer within a minute; and the
speech events' types."""

from __future__ import annotations

from typing import Any

from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, types

STARTED = "input_audio_buffer.speech_started"
STOPPED = "input_audio_buffer.speech_stopped"


def turn_based(**td: Any) -> Script:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False, min_barge_in_ms=60_000)
    sc = Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))
    if td:
        update = {"type": "session.update", "session": {"turn_detection": td}}
        assert types(sc.client(update)) == ["session.updated"]
    return sc


def relay() -> Script:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False, min_barge_in_ms=60_000)
    caps = {"supports_barge_in": False}
    session = BargeInRelaySession("sess_0123456789abcdef", "m", settings, caps)
    session.bind_upstream({"type": "session.created", "session": {"id": "up"}, "resume_token": "t"})
    return Script(session)
