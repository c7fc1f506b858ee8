"""The emulation core shared by both emulated modes: inputs in, actions out.

Sans-I/O (``docs/architecture.md``): ``handle(input) -> list[Action]``; no sockets, no
clock. ``EmulatedSession`` is the dispatch: each input, and each client or upstream
event by its type, to its handler. Its parts and what turn decisions need of it are
``shim/session_parts.py``; its snapshot and restore ``shim/session_durable.py``. A
dialect in ``shim/dialects/`` says how a user turn reaches the upstream and how the
upstream's output becomes GA events: its dispatch tables, ``commit_turn`` and
``cancel_response``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from shim import client_events, wire
from shim.actions import Action, CloseClient, SendClient
from shim.fault import fault_actions
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
from shim.output import ActiveResponse
from shim.session_config import session_object
from shim.session_durable import DurableSession
from shim.settings import VAD_RATE, ShimSettings

__all__ = ["VAD_RATE", "ActiveResponse", "EmulatedSession", "EventHandler", "ShimSettings"]

# A client or upstream event's handler: (event, now_ms) -> actions.
EventHandler = Callable[[dict[str, Any], float], list[Action]]


class EmulatedSession(DurableSession):
    """State and rules common to ``duplex_emulated`` and ``barge_in_emulated``."""

    mode = "emulated"

    def __init__(
        self, session_id: str, model: str, settings: ShimSettings, vad_enabled: bool = True
    ) -> None:
        super().__init__(session_id, model, settings, vad_enabled)
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

    def client_retrieve(self, ev: dict[str, Any], now: float) -> list[Action]:
        found = client_events.retrieve(self, ev)
        if found is not None:
            return found
        item_id = ev.get("item_id")
        return [self.err(*wire.unknown_item("conversation.item.retrieve", item_id), ev, "item_id")]

    # ------------------------------------------------------------ the VAD and time
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

    # ------------------------------------------------------------ dialect moves
    def client_other(self, inp: ClientEvent) -> list[Action]:
        """A client event this mode does not interpret: relayed, or refused."""
        raise NotImplementedError

    def upstream_other(self, ev: dict[str, Any], now: float) -> list[Action]:
        """An upstream event with no handler of its own: passed to the client."""
        return [SendClient(ev)]

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        return [CloseClient(1011, "upstream lost")]

    def on_upstream_reattached(self, inp: UpstreamReattached) -> list[Action]:
        return []

    def on_upstream_checkpointed(self, inp: UpstreamCheckpointed) -> list[Action]:
        return []
