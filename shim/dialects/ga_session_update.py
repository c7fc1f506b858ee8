"""A GA client's ``session.update`` over a duplex upstream (``ga_relay.py``).

The proxy applies it to its GA session, states the upstream session it implies in
full (``shim/ga_upstream.py``: so that a fresh upstream session after a loss or a
move gets the same, ``duplex_relay.py``, ``shim/snapshot.py``), and answers
``session.updated`` itself with its own GA session object. The live upstream gets
that statement without ``turn_detection`` when its turn detection stays as it was:
vLLM-Omni builds a fresh detector on every update naming it (its
``engine/duplex/turn_detection.py``, ``PendingTurnDetectionUpdate``), dropping the
speech in progress and restarting its VAD clock, so an update of the instructions
alone must not restart it. Held audio keeps the format it came in (``ga_append.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

from shim.actions import Action, SendClient, SendUpstream
from shim.audio import AudioFormat
from shim.dialects import ga_append, ga_instructions, ga_voice
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_turn_wait import TurnWait
from shim.dialects.relay_upstream_audio import UpstreamAudio
from shim.ga_upstream import upstream_session
from shim.playback import PlaybackLedger
from shim.session_config import (
    IDLE_MESSAGE,
    IDLE_PARAM,
    UNSUPPORTED,
    ClientSessionConfig,
    SessionConfigError,
    idle_timeout_asked,
    session_object,
)
from shim.session_told import relayed
from shim.turns import Turns


class UpdateHost(Protocol):
    session_id: str
    model: str
    config: ClientSessionConfig
    last_update: dict[str, Any] | None
    audio_gate: AudioGate
    turn_wait: TurnWait
    turns: Turns
    ledger: PlaybackLedger
    upstream_audio: UpstreamAudio

    def kept_update(self) -> dict[str, Any] | None: ...

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


def idle_refusal(s: UpdateHost, ev: dict[str, Any]) -> list[SendClient]:
    """The refusal of the idle timeout ``ev`` asks for, if it does: the upstream takes
    the turns and has none. That field alone is refused; the rest of the update applies
    (``apply_session_update`` keeps no idle timeout here)."""
    return [s.err(UNSUPPORTED, IDLE_MESSAGE, ev, IDLE_PARAM)] if idle_timeout_asked(ev) else []


def opened(s: UpdateHost, ev: dict[str, Any]) -> list[Action] | None:
    """The client's own first ``session.update``, which opened the upstream session
    (``shim/ga_upstream.py``, ``opening_session``, over the route's, stated first:
    ``proxy/emulated/shim_setup.py``): applied here only, and what the upstream opened
    with decides its lock, its ``initial_user_text`` a user item in place of the
    route's. Returns what the client is told after ``session.created``: the refusals of
    fields it asked for that the upstream opened without (its idle timeout), then its
    ``session.updated``, as every update the proxy takes is answered. One the proxy
    refuses opened it as the route's alone: None, and it is answered as a live update
    is, with its refusal."""
    if s.apply_update(ev) is not None:
        return None
    s.upstream_audio.stated(ev.get("session"), opening=True, client=True)
    session = session_object(s.session_id, s.model, s.config, relayed(s.kept_update()))
    return [*idle_refusal(s, ev), SendClient({"type": "session.updated", "session": session})]


def _turn_detection(update: dict[str, Any] | None) -> Any:
    session = update.get("session") if update is not None else None
    return session.get("turn_detection", _UNSTATED) if isinstance(session, dict) else _UNSTATED


_UNSTATED = object()


def answer(s: UpdateHost, ev: dict[str, Any], now: float) -> list[Action]:
    was = s.config.input_format
    before = _turn_detection(s.last_update)  # as the upstream has it
    kept = s.kept_update()
    voice = ga_voice.of(kept["session"] if kept is not None else None)
    refusals: list[Action] = []
    raw = ev.get("session")
    wanted = ga_voice.of(raw)
    changed = wanted is not ga_voice.UNSTATED and wanted != voice
    if isinstance(raw, dict) and changed and s.upstream_audio.spoke:
        raw = ga_voice.without(raw)
        refusals.append(s.err(ga_voice.CODE, ga_voice.MESSAGE, ev, ga_voice.PARAM))
    refused = False
    if isinstance(raw, dict) and s.upstream_audio.heard:
        raw, refused = ga_instructions.screened(kept["session"] if kept else None, raw)
    if refused:
        refusals.append(
            s.err(ga_instructions.CODE, ga_instructions.MESSAGE, ev, ga_instructions.PARAM)
        )
    error = s.apply_update({**ev, "session": raw} if raw is not ev.get("session") else ev)
    if error is not None:
        return [s.err(error.code, str(error), ev, error.param)]
    refusals += idle_refusal(s, ev)
    s.upstream_audio.stated(raw)
    if s.config.input_format != was:  # held audio keeps the format it came in
        ga_append.stamp_held(s.audio_gate, s.turn_wait, was)
    assert s.last_update is not None
    update = dict(s.last_update)
    if before is not _UNSTATED and _turn_detection(update) == before:
        update["session"] = {k: v for k, v in update["session"].items() if k != "turn_detection"}
    if voice is not ga_voice.UNSTATED and ga_voice.of(update["session"]) == voice:
        update["session"] = ga_voice.without(update["session"])  # vLLM-Omni refuses it
    if isinstance(ev.get("event_id"), str):
        update["event_id"] = ev["event_id"]
    session = session_object(s.session_id, s.model, s.config, relayed(s.kept_update()))
    return [
        *refusals,
        SendUpstream(update),
        SendClient({"type": "session.updated", "session": session}),
        *s.turns.detection_changed(now),
    ]
