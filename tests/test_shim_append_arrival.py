"""A client's append is dated by when the edge read it (``ClientEvent.arrived_ms``):
the microphone's clock (``shim/echo_clock.py``) takes each append's arrival, and no
other event's, which never reaches it (``shim/session.py``, ``on_client``)."""

from __future__ import annotations

import orjson

from shim.audio import b64encode
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent
from shim.session import ShimSettings
from shim.vad_gate import VadParams


def test_an_appends_arrival_reaches_the_microphones_clock_and_no_other_events() -> None:
    settings = ShimSettings(vad=VadParams(), echo_suppression=True)
    s = TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings)
    assert s.echo is not None
    clock = s.echo.far.clock
    append = {"type": "input_audio_buffer.append", "audio": b64encode(bytes(960))}
    s.handle(ClientEvent(append, orjson.dumps(append).decode(), 100.0, 40.0))
    assert clock.arrival == 40.0
    update = {"type": "session.update", "session": {}}
    s.handle(ClientEvent(update, orjson.dumps(update).decode(), 120.0, 110.0))
    assert clock.arrival == 40.0  # the last append's, still
