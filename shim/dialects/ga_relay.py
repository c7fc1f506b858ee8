"""``barge_in_emulated`` for an OpenAI GA client over a duplex upstream.

A GA client (the ``openai`` SDK, the Agents SDK, the realtime console) sends no
``playback.ack``, assumes server VAD, and stops playback on every ``speech_started``;
a vLLM-Omni duplex upstream owns playback by acks, detects turns only under server VAD
and has overlap rules of its own (``docs/fidelity.md``). Over such an upstream the proxy
runs the session as the barge-in relay (``duplex_relay.py``) and adds, for the GA client:

* the upstream session configured as GA implies (``shim/ga_upstream.py``): server
  VAD unless the client turned turn detection off, its input rate declared; the
  proxy answers ``session.update`` itself with its GA session object;
* ``playback.ack`` from the proxy's playback clock from the start (the upstream
  hands the turn back only once the answer is acknowledged), and of what was heard
  on a barge-in or a truncation;
* the microphone held back from the upstream while the answer owns the turn or an
  overlap is undecided (``relay_gate.py``): its own overlap rules never see echo or
  backchannels, and a decided barge-in's speech reaches it after the cut; under
  push-to-talk, none of it is lost, nor overtaken by the client's commit, which waits
  for an answer still generated to end (``relay_turn_wait.py``);
* its audio in the float format the upstream reads, when the upstream declares one
  in its ``session.created`` (``shim/upstream_input.py``: PersonaPlex);
* only GA events and values for the client (``ga_events.py``), and the upstream's
  errors that answer the proxy's own commands kept from it (``NoteUpstreamError``);
  each user turn in GA order under one item id (``ga_turn_order.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from shim import client_events
from shim.actions import Action, ForwardUpstream, SendUpstream
from shim.dialects import (
    ga_append,
    ga_events,
    ga_fields,
    ga_item_create,
    ga_response_create,
    ga_session_update,
    ga_truncate,
    relay_upstream,
    relay_wait_snapshot,
)
from shim.dialects.ga_relay_gate import GatedRelaySession
from shim.dialects.ga_told import ToldToClient
from shim.dialects.ga_turn_order import UserTurnOrder
from shim.dialects.relay_gate import AudioGate
from shim.dialects.relay_turn_end import COMMIT, ahead_of
from shim.dialects.relay_turn_wait import TurnWait, generating
from shim.dialects.relay_upstream_audio import UpstreamAudio
from shim.fault import fault_actions
from shim.inputs import ClientEvent, Input, UpstreamEvent
from shim.session import EmulatedSession, EventHandler, ShimSettings
from shim.session_config import SessionConfigError


class GaRelaySession(GatedRelaySession):
    answers_reports, native_client = True, False  # a GA client's words and reading
    timeline_follows_handle = False  # its upstream actions go later (``_tagged``)

    def __init__(
        self,
        session_id: str,
        model: str,
        settings: ShimSettings,
        upstream_capabilities: Mapping[str, Any] | None,
    ) -> None:
        self.audio_gate = AudioGate()
        self.turn_wait, self.turn_order = TurnWait(), UserTurnOrder()
        self._own = 0
        self.told = ToldToClient()  # what the client is told, finished (``ga_told.py``)
        self.own_command_errors = 0
        # The upstream's declared float input, the client's audio converted to it.
        self.upstream_audio = UpstreamAudio(upstream_capabilities)
        super().__init__(session_id, model, settings, upstream_capabilities)
        self.upstream_audio.timeline = self.upstream_timeline  # a unit a clear drops
        self.reports.proxy_acked = True
        self.apply_update({"type": "session.update", "session": {}})  # GA defaults upstream

    def bind_upstream(self, event: Mapping[str, Any]) -> None:
        super().bind_upstream(event)
        self.reports.proxy_acked = True  # its playback is owned by acks from the start
        self.upstream_audio.bind(event, self.last_update)

    def handle(self, inp: Input) -> list[Action]:
        actions = super().handle(inp)
        try:  # never an exception out of handle() (shim/fault.py)
            self.upstream_audio.follow(actions, inp)  # a fresh session asked for, a turn
            actions += self._follow_gate(inp)
            kind = inp.event.get("type") if isinstance(inp, ClientEvent) else None
            ptt = self._push_to_talk()
            if isinstance(inp, ClientEvent):
                waits = kind == COMMIT and ptt and generating(self.response)
                actions = self.turn_wait.route(actions, kind, waits, ptt)
            out: list[Action] = []
            due = self.turn_wait.due(self.response)
            for action, by, whole in [(a, kind, ptt) for a in actions] + due:
                out += self._tagged(action, by, whole)
            self.upstream_timeline.settled()
            out = self.turn_order.to_client(self.turn_order.to_upstream(out), self.history.end_ms)
            # The client's metadata in its response's events whoever made them: the
            # upstream's, or the proxy's own response.done of a cut or a lost upstream.
            vad_answers = self.config.turn.vad is not None and self.config.turn.create_response
            return ga_fields.told(self.told.told(inp, out, vad_answers))
        except Exception as exc:
            return [*actions, *fault_actions(inp, exc)]

    def _tagged(self, action: Action, kind: object, whole: bool = False) -> list[Action]:
        """``kind``, ``whole``: the client event's type (None: not a client's), push-to-talk."""
        self.upstream_timeline.went(action)  # as it goes, in the order it goes
        if isinstance(action, ForwardUpstream) and kind is not None:
            ahead = ahead_of(self, kind, whole=whole)
            before = [a for one in ahead for a in self._tagged(one, None)]
            return [*before, *self.upstream_audio.forwarded(action, kind)]
        if not isinstance(action, SendUpstream):
            return [action]
        ev = action.event
        if ev.get("type") == ga_append.APPEND:
            converted = ga_append.upstream_form(self.upstream_audio, ev, self.config.input_format)
            if converted is not None:
                return converted
        if ev.get("type") not in ga_events.OWN_COMMANDS or "event_id" in ev:
            return [action]
        self._own += 1
        return [SendUpstream({"event_id": f"{ga_events.OWN_PREFIX}{self._own:08d}", **ev})]

    # ------------------------------------------------------------ client events
    def client_handlers(self) -> dict[str, EventHandler]:
        return {
            **super().client_handlers(),
            "response.create": self._client_response_create,
            "response.cancel": self._client_response_cancel,
            "conversation.item.create": self._client_item_create,
        }

    def _client_item_create(self, ev: dict[str, Any], now: float) -> list[Action]:
        """Relayed, unless its item is none GA describes (``ga_item_create.py``)."""
        no = ga_item_create.refusal(ev)
        if no is not None:
            return [self.err(no[0], no[1], ev, no[2])]
        return [ForwardUpstream(orjson.dumps(ev).decode())]

    def _client_response_cancel(self, ev: dict[str, Any], now: float) -> list[Action]:
        """Relayed; but one naming a response while none is in progress, which vLLM-Omni
        ignores without a word (``engine/duplex/session/runner.py``), GA answers with
        its error (the cancel "cannot be served"), so the proxy does."""
        named = ev.get("response_id")
        if named and not (self.response is not None and self.response.live):
            return [self.err("response_cancel_not_active", ga_events.NO_ACTIVE_RESPONSE, ev)]
        return [ForwardUpstream(orjson.dumps(ev).decode())]

    def _client_response_create(self, ev: dict[str, Any], now: float) -> list[Action]:
        """Relayed, unless it asks what the upstream would do otherwise than GA
        (``ga_response_create.py``); its metadata is the proxy's to tell."""
        try:
            sent, metadata = ga_response_create.screened(ev, self.config)
        except ga_response_create.Refusal as no:
            return [self.err(no.code, str(no), ev, no.param)]
        self.told.metadata.asked(metadata, ev.get("event_id"))
        self.told.create_ids.sent(ev.get("event_id"))
        return [ForwardUpstream(orjson.dumps(sent).decode())]

    def apply_update(self, ev: dict[str, Any]) -> SessionConfigError | None:
        error = super().apply_update(ev)
        if error is None:
            pinned = self.upstream_audio.pinned
            self.last_update = ga_session_update.stated(ev, self.config, pinned)
        return error

    def client_session_update(self, ev: dict[str, Any], now: float) -> list[Action]:
        return ga_session_update.answer(self, ev, now)

    def _client_truncate(self, ev: dict[str, Any], now: float) -> list[Action]:
        out = super()._client_truncate(ev, now)
        item = self.ledger.get(str(ev.get("item_id")))
        if client_events.is_refusal(out) or item is None:
            return out
        if self.reports.before_this_session(item.item_id):
            return out  # the upstream session never had it
        wait, cancelled = self.turn_wait, self.cancelled_ids
        return ga_truncate.upstream_too(out, item, self.response, self.reports, wait, cancelled)

    def snapshot(self) -> dict[str, Any]:
        waiting = relay_wait_snapshot.wire(self.turn_wait, self.audio_gate)
        heard = self.upstream_audio.wire()
        return {**super().snapshot(), **waiting, **heard, **self.turn_order.wire()}

    def restore(
        self, snap: dict[str, Any], resumed: Mapping[str, Any] | None = None, now: float = 0.0
    ) -> list[Action]:
        out = super().restore(snap, resumed, now)
        relay_wait_snapshot.restore(self.turn_wait, self.audio_gate, snap)
        self.upstream_audio.restore(snap, resumed)
        self.turn_order.restore(snap)
        return ga_fields.told(out)

    # ------------------------------------------------------------ upstream events
    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        screened = relay_upstream.screen(self, inp)
        if isinstance(screened, list):
            return screened
        if screened.get("type") == "error":
            own = ga_events.own_error(screened)
            if own is not None:
                self.own_command_errors += 1
                return [own]
        kind = screened.get("type")
        if not isinstance(kind, str):
            return []  # not an event a GA client could parse
        if kind == "conversation.item.truncated":
            return []  # the proxy answered the client's truncate itself
        if kind in ga_events.SPEECH_EVENTS and self.config.turn.vad is None:
            # Without server VAD the upstream still marks a buffer's first append and
            # its commit as speech (docs/fidelity.md, row 2); GA says nothing then.
            return []
        if kind == "response.done" and self.turn_wait.note_done(self.response, screened):
            self.reports.end_reported = True  # the client's cancel ended it upstream
        live = self.response.response_id if self.response and self.response.live else None
        ev = ga_events.translate(screened, live)
        if ev is None:
            return []
        return EmulatedSession.on_upstream(self, UpstreamEvent(ev, inp.raw, inp.now_ms))
