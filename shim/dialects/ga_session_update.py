"""A GA client's ``session.update`` over a duplex upstream (``ga_relay.py``).

The proxy applies it to its GA session, states the upstream session it implies in
full (``shim/ga_upstream.py``: so that a fresh upstream session after a loss gets
the same), and answers ``session.updated`` itself with its own GA session object.
Held audio keeps the format it came in (``ga_append.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

from shim.actions import Action, SendClient, SendUpstream
from shim.audio import AudioFormat
from shim.dialects import ga_append
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_turn_wait import TurnWait
from shim.ga_upstream import upstream_session
from shim.session_config import ClientSessionConfig, SessionConfigError, session_object
from shim.turns import Turns


class UpdateHost(Protocol):
    session_id: str
    model: str
    config: ClientSessionConfig
    last_update: dict[str, Any] | None
    audio_gate: AudioGate
    turn_wait: TurnWait
    turns: Turns

    def apply_update(self, ev: dict[str, Any]) -> SessionConfigError | None: ...

    def err(
        self, code: str, message: str, ev: dict[str, Any] | None = None, param: str | None = None
    ) -> SendClient: ...


def stated(
    ev: dict[str, Any], cfg: ClientSessionConfig, pinned: AudioFormat | None
) -> dict[str, Any]:
    """The upstream's ``session.update`` for the session as applied, in full."""
    nested = ev.get("session")
    raw = nested if isinstance(nested, dict) else {}
    return {
        "type": "session.update",
        "session": upstream_session(raw, cfg, opening=True, pinned=pinned),
    }


def answer(s: UpdateHost, ev: dict[str, Any], now: float) -> list[Action]:
    was = s.config.input_format
    error = s.apply_update(ev)
    if error is not None:
        return [s.err(error.code, str(error), ev, error.param)]
    if s.config.input_format != was:  # held audio keeps the format it came in
        ga_append.stamp_held(s.audio_gate, s.turn_wait, was)
    assert s.last_update is not None
    update = dict(s.last_update)
    if isinstance(ev.get("event_id"), str):
        update["event_id"] = ev["event_id"]
    session = session_object(s.session_id, s.model, s.config)
    return [
        SendUpstream(update),
        SendClient({"type": "session.updated", "session": session}),
        *s.turns.detection_changed(now),
    ]
