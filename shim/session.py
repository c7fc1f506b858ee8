"""The emulation core shared by both emulated modes: inputs in, actions out.

Sans-I/O (``docs/architecture.md``): ``handle(input) -> list[Action]``; no sockets, no
clock. One part per job: input history (``shim/input_history.py``), turn decisions
(``shim/turns.py``), the barge-in table (``shim/overlap.py``), the output path with its
hold and release (``shim/output.py``), response closing (``shim/response_close.py``),
the snapshot (``shim/snapshot.py``). A dialect in ``shim/dialects/`` says how a user
turn reaches the upstream and how the upstream's output becomes GA events: its
dispatch tables, ``commit_turn`` and ``cancel_response``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from shim import client_events, played_snapshot, wire
from shim.actions import Action, CloseClient, SendClient
from shim.assistant_audio import AssistantAudio
from shim.echo import EchoSuppressor
from shim.fault import fault_actions
from shim.input_history import InputHistory
from shim.inputs import (
    ClientEvent,
    ClientPresence,
    Input,
    Tick,
    UpstreamCheckpointed,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
    VadWindow,
)
from shim.native_client import InputRates, NativeOptions
from shim.output import ActiveResponse, AssistantOutput, response_state
from shim.overlap import OverlapMachine, Step
from shim.overlap_evidence import Float32Array, OverlapEvidence
from shim.playback import PlaybackLedger
from shim.response_close import lost_response_done
from shim.session_config import (
    ClientSessionConfig,
    SessionConfigError,
    TurnDetection,
    apply_session_update,
    session_object,
)
from shim.settings import VAD_RATE, ShimSettings
from shim.snapshot import SessionSnapshot
from shim.turns import Turns
from shim.vad_gate import VadGate
from shim.vad_timeline import VadTimeline

__all__ = ["VAD_RATE", "ActiveResponse", "EmulatedSession", "EventHandler", "ShimSettings"]

# A client or upstream event's handler: (event, now_ms) -> actions.
EventHandler = Callable[[dict[str, Any], float], list[Action]]


class EmulatedSession:
    """State and rules common to ``duplex_emulated`` and ``barge_in_emulated``."""

    mode = "emulated"
    # Announce every user turn (speech_started/stopped); False where the upstream
    # takes turns itself and the proxy only speaks up to interrupt.
    announce_turns = True
    # GA's idle_timeout_ms kept (and acted on): only where the proxy takes the turns.
    idle_timeouts = False

    def __init__(
        self, session_id: str, model: str, settings: ShimSettings, vad_enabled: bool = True
    ) -> None:
        self.session_id, self.model, self.settings = session_id, model, settings
        # Server VAD as the operator configured it ([vad]), until the client says otherwise.
        self.config = ClientSessionConfig(turn=TurnDetection(settings.vad))
        self.vad_enabled = vad_enabled
        self.gate = VadGate(settings.vad)
        self.history, self.overlap = InputHistory(), OverlapMachine()
        self.ledger = PlaybackLedger()
        self.echo = EchoSuppressor() if settings.echo_suppression else None
        latency = self.echo.latency if self.echo is not None else 0
        self.evidence = OverlapEvidence(latency, settings.overlap_keep)
        self.output = AssistantOutput(self.ledger, self.echo, self.history, self.overlap)
        self.turns = Turns(self)
        self.assistant_audio = AssistantAudio()
        self.rates, self.native = InputRates(), NativeOptions()
        self.vad_timeline = VadTimeline()
        self._counter = 0
        self.last_item_id: str | None = None
        self._inputs: dict[type, Callable[[Any], list[Action]]] = {
            ClientEvent: self.on_client,
            UpstreamEvent: self.on_upstream,
            VadWindow: self.on_vad,
            Tick: lambda tick: self.on_tick(tick.now_ms),
            UpstreamLost: self.on_upstream_lost,
            UpstreamReattached: self.on_upstream_reattached,
            UpstreamCheckpointed: self.on_upstream_checkpointed,
            ClientPresence: lambda _: [],  # read only where GA's idle timeout is kept
        }
        # Built once, here: a dialect sets its own attributes before calling this.
        self._client_table = self.client_handlers()
        self._upstream_table = self.upstream_handlers()

    @property
    def response(self) -> ActiveResponse | None:
        return self.output.response

    def new_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_{self.session_id[-12:]}{self._counter:06d}"

    # ------------------------------------------------------------ dispatch
    def handle(self, inp: Input) -> list[Action]:
        """One input in, the actions it calls for out; never raises.

        An unexpected exception is a bug: the client gets a coded ``internal_error``
        naming the event, the edge a ``ReportFault`` to log, and the session goes on."""
        try:
            handler = self._inputs.get(type(inp))
            if handler is None:
                raise TypeError(f"unknown input {inp!r}")
            return handler(inp)
        except Exception as exc:
            return fault_actions(inp, exc)

    def client_handlers(self) -> dict[str, EventHandler]:
        """Client event type -> handler; a dialect adds its own to these."""
        return {
            "session.update": self.client_session_update,
            "input_audio_buffer.append": partial(client_events.input_audio, self),
            "playback.ack": partial(client_events.playback_ack, self),
            "conversation.item.truncate": partial(client_events.truncate, self),
            "conversation.item.retrieve": self.client_retrieve,
        }

    def upstream_handlers(self) -> dict[str, EventHandler]:
        """Upstream event type -> handler (the dialect's own)."""
        return {}

    def on_client(self, inp: ClientEvent) -> list[Action]:
        kind = inp.event.get("type")
        handler = self._client_table.get(kind) if isinstance(kind, str) else None
        if handler is None:
            return self.client_other(inp)
        if kind == "input_audio_buffer.append" and self.echo is not None:  # dated by arrival
            self.echo.far.clock.arrival = inp.arrived_ms
        return handler(inp.event, inp.now_ms)

    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        kind = inp.event.get("type")
        handler = self._upstream_table.get(kind) if isinstance(kind, str) else None
        if handler is None:  # a skipped one has no type: its seq is a relay's (relay_upstream.py)
            return [] if inp.skipped else self.upstream_other(inp.event, inp.now_ms)
        return handler(inp.event, inp.now_ms)

    def err(
        self, code: str, message: str, ev: dict[str, Any] | None = None, param: str | None = None
    ) -> SendClient:
        event_id = ev.get("event_id") if ev else None
        event_id = event_id if isinstance(event_id, str) else None
        return SendClient(wire.error(code, message, event_id=event_id, param=param))

    # ------------------------------------------------------------ client
    def client_session_update(self, ev: dict[str, Any], now: float) -> list[Action]:
        error = self.apply_update(ev)
        if error is not None:
            return [self.err(error.code, str(error), ev, error.param)]
        session = session_object(self.session_id, self.model, self.config)
        updated = SendClient({"type": "session.updated", "session": session})
        return [updated, *self.turns.detection_changed(now)]

    def apply_update(self, ev: dict[str, Any]) -> SessionConfigError | None:
        """Apply a session.update locally; a rejected update changes nothing."""
        try:
            cfg = apply_session_update(self.config, ev, self.settings.vad, self.idle_timeouts)
        except SessionConfigError as exc:
            return exc
        if cfg.turn.vad is not None:
            self.gate.update(cfg.turn.vad)
        elif self.gate.speaking:
            self.gate.reset()
        self.config = cfg
        self.native.note_update(ev)
        return None

    def client_retrieve(self, ev: dict[str, Any], now: float) -> list[Action]:
        found = client_events.retrieve(self, ev)
        if found is not None:
            return found
        item_id = ev.get("item_id")
        return [self.err(*wire.unknown_item("conversation.item.retrieve", item_id), ev, "item_id")]

    # ------------------------------------------------------------ output
    def new_response(self, response_id: str, item_id: str) -> ActiveResponse:
        return self.output.start(response_id, item_id)

    def release_output(self, now: float) -> list[Action]:
        return self.output.release(now, self.config.output_format.rate_hz)

    def on_vad(self, win: VadWindow) -> list[Action]:
        """A VAD window, placed on the input timeline (``shim/vad_timeline.py``)."""
        end = self.vad_timeline.to_input(win.end_sample)
        return self.turns.on_vad(VadWindow(win.prob, end, win.now_ms))

    def on_tick(self, now: float) -> list[Action]:
        return self.turns.on_tick(now)

    def wants_ticks(self, now: float) -> bool:
        """Whether a tick can change anything (``on_tick``): the output's clock runs or an
        overlap is undecided. The edge ticks only then."""
        return self.output.needs_clock(now) or self.overlap.episode is not None

    def due_at(self) -> float | None:
        """When time alone next changes something with no ticks (ms, the edge's clock)."""
        return None

    def far_for(self, start: int, end: int, heard: bool = False) -> Float32Array | None:
        """Audio sent that echoes in mic samples [start, end) (``heard``: at its echo's level)."""
        e = self.echo
        return None if e is None else e.expected(start, end) if heard else e.echoing(start, end)

    def overlap_ended(self, step: Step, now: float) -> list[Action]:
        """An overlap was decided (``step.outcome``); a dialect may have more to do."""
        return []

    # ------------------------------------------------------------ durable state
    def open_response(self) -> ActiveResponse | None:
        """The response the client has not had all of (produced, or held): a move ends it."""
        resp = self.response
        return resp if resp is not None and resp.live else None

    def snapshot_state(self) -> SessionSnapshot:
        cfg = self.config
        opened = self.open_response()
        return SessionSnapshot(
            counter=self._counter,
            last_item_id=self.last_item_id,
            input_format=(cfg.input_format.encoding, cfg.input_format.rate_hz),
            output_format=(cfg.output_format.encoding, cfg.output_format.rate_hz),
            turn_detection=cfg.turn.as_wire(),
            instructions=cfg.instructions,
            open_response=response_state(opened) if opened is not None else None,
        )

    def snapshot(self) -> dict[str, Any]:
        """What another replica needs to carry the session on, as the store keeps it."""
        wired = {**self.snapshot_state().to_wire(), **self.native.to_wire()}
        return {**wired, **played_snapshot.wire(self.ledger)}

    def restore(self, snap: dict[str, Any]) -> list[Action]:
        """Carry on from ``snapshot()``; a response that was mid-stream ends here (a
        snapshot it cannot read: ``SnapshotError``, ``SnapshotVersionError``)."""
        self.native.restore(snap)
        return self.restore_state(SessionSnapshot.from_wire(snap))

    def restore_state(self, snap: SessionSnapshot) -> list[Action]:
        self._counter = snap.counter
        self.last_item_id = snap.last_item_id
        self.apply_update(snap.config_update())
        if self.config.turn.vad is not None:
            # The VAD restarts with a fresh stream, whose time starts again at zero.
            self.gate.reset()
        opened = snap.open_response
        if opened is None:
            return []
        # Never silently: the response the lost upstream was producing ends here.
        item = wire.assistant_item(opened.item_id, "incomplete", opened.transcript)
        return [lost_response_done(opened.response_id, [item])]

    # ------------------------------------------------------------ dialect moves
    def client_other(self, inp: ClientEvent) -> list[Action]:
        """A client event this mode does not interpret: relayed, or refused."""
        raise NotImplementedError

    def upstream_other(self, ev: dict[str, Any], now: float) -> list[Action]:
        """An upstream event with no handler of its own: passed to the client."""
        return [SendClient(ev)]

    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        raise NotImplementedError

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]:
        raise NotImplementedError

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        return [CloseClient(1011, "upstream lost")]

    def on_upstream_reattached(self, inp: UpstreamReattached) -> list[Action]:
        return []

    def on_upstream_checkpointed(self, inp: UpstreamCheckpointed) -> list[Action]:
        return []

    def upstream_position(self) -> tuple[str, int] | None:
        """(upstream session id, seq) where the upstream journals its events: the seq
        up to which the session's state covers them (what may be acknowledged once
        checkpointed); else None."""
        return None
