"""``duplex_emulated``: full duplex over a turn-based upstream.

The upstream speaks the turn-based dialect (``shim/dialects/turn_wire.py``). It has
no cancel: the only abort is closing the socket, so a barge-in drops it and
redials for the next turn. The client sees GA events: VAD turns, ``response.*``
with ids, cancellation.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from functools import partial
from typing import Any

from shim import client_events, told_run, wire
from shim.actions import AbortUpstream, Action, SendClient
from shim.audio import Int16Array
from shim.client_events import is_refusal
from shim.dialects import turn_acks, turn_answer, turn_idle, turn_limits, turn_upstream, turn_wire
from shim.dialects.ga_response_create import ResponseMetadata
from shim.dialects.turn_answer import PendingTurn
from shim.dialects.turn_items import UserItems
from shim.dialects.turn_refusals import Refusals
from shim.idle_timeout import IdleTimer
from shim.input_history import ms_to_sample
from shim.inputs import ClientEvent, ClientPresence, Input, UpstreamLost, VadWindow
from shim.response_close import close_response
from shim.session import EmulatedSession, EventHandler, ShimSettings
from shim.session_config import NATIVE_CONFIG
from shim.session_told import TURN_BASED


class TurnBasedSession(EmulatedSession):
    mode = "duplex_emulated"
    idle_timeouts = True  # GA's idle_timeout_ms: the proxy takes the turns (turn_idle.py)

    def __init__(
        self,
        session_id: str,
        model: str,
        upstream_model: str,
        settings: ShimSettings,
        native_client: bool = False,
    ) -> None:
        self.upstream_model = upstream_model
        self.empty_commit = turn_limits.empty_commit(native_client)
        self.refusals = Refusals(native_client)
        self.upstream_busy = False
        self.pending: deque[PendingTurn] = deque()  # bounded by turn_answer.waiting
        self.commit_from_ms = 0
        self.final_text: str | None = None
        self.merges_turns = not native_client  # GA's turns (a native client's: turn_answer.waiting)
        self.user_items, self.metadata, self.idle = UserItems(), ResponseMetadata(), IdleTimer()
        super().__init__(session_id, model, settings)
        self.config = NATIVE_CONFIG if native_client else replace(self.config, told=TURN_BASED)
        self._inputs[ClientPresence] = self.on_presence

    def on_presence(self, inp: ClientPresence) -> list[Action]:
        """No idle timeout while no client is attached (``IdleTimer.away``)."""
        (self.idle.back if inp.attached else self.idle.away)(inp.now_ms)
        return []

    def open_upstream(self) -> list[Action]:
        """What a fresh upstream connection needs before it takes a turn."""
        return [turn_wire.open_upstream(self.upstream_model)]

    def handle(self, inp: Input) -> list[Action]:
        return self.metadata.told_all(super().handle(inp))  # the client's, in its response

    def live(self) -> bool:
        return self.response is not None and self.response.producing

    # ------------------------------------------------------------ client events
    def client_handlers(self) -> dict[str, EventHandler]:
        return {
            **super().client_handlers(),
            "session.update": self._client_session_update,
            "input_audio_buffer.commit": self._client_commit,
            "input_audio_buffer.clear": self._client_clear,
            "response.create": self._client_response_create,
            "response.cancel": self._client_response_cancel,
            "playback.ack": lambda ev, now: turn_acks.answer(self, ev, now, self.refusals.native),
            "conversation.item.delete": self._client_delete,
            "input_audio_buffer.append": self._client_append,
            # A native client's truncate of a user turn is refused as not the assistant's.
            "conversation.item.truncate": partial(
                client_events.truncate, self, others=self.user_items
            ),
        }

    def client_other(self, inp: ClientEvent) -> list[Action]:
        message = turn_limits.event_message(inp.event.get("type"))
        return [self.err("unsupported_event", message, inp.event, "type")]

    def _client_append(self, ev: dict[str, Any], now: float) -> list[Action]:
        """Audio is taken; camera frames (vLLM-Omni's ``video_frames``) are refused,
        never taken and dropped: the turn-based upstream sees no video."""
        if not ev.get("video_frames"):
            return client_events.input_audio(self, ev, now)
        no = self.err(turn_limits.UNSUPPORTED, turn_limits.VIDEO_MESSAGE, ev, "video_frames")
        if ev.get("audio") is None and ev.get("delta") is None:
            return [no]  # nothing else in it
        rest = {k: v for k, v in ev.items() if k != "video_frames"}
        return [no, *client_events.input_audio(self, rest, now)]

    def _client_delete(self, ev: dict[str, Any], now: float) -> list[Action]:
        """An item this session has cannot leave the conversation here (the dialect has
        no delete); one it does not have is refused as GA refuses it."""
        item_id = ev.get("item_id")
        if item_id in self.user_items or self.ledger.get(str(item_id)) is not None:
            message = turn_limits.event_message(ev.get("type"))
            return [self.err("unsupported_event", message, ev, "type")]
        return [self.err(*wire.unknown_item("conversation.item.delete", item_id), ev, "item_id")]

    def client_retrieve(self, ev: dict[str, Any], now: float) -> list[Action]:
        found = self.user_items.retrieved(ev)
        return found if found is not None else super().client_retrieve(ev, now)

    def _client_session_update(self, ev: dict[str, Any], now: float) -> list[Action]:
        """Apply what the dialect can carry; refuse the rest, coded, field by field."""
        refusal = self.refusals.session_update(ev)
        if refusal is not None:
            return [self.err(*refusal)]
        kept, refused = turn_limits.strip_session_fields(ev, self.refusals.native)
        out = self.client_session_update(self.refusals.as_read(kept), now)
        if is_refusal(out):
            return out  # invalid anyway: that one error, nothing changed
        msg = turn_limits.session_field_message
        return [*(self.err(turn_limits.UNSUPPORTED, msg(p), ev, p) for p in refused), *out]

    def _client_commit(self, ev: dict[str, Any], now: float) -> list[Action]:
        end_ms = self.history.end_ms
        if self.turns.runs.item is not None:
            item_id, start = self.turns.runs.item, self.turns.runs.start_ms
            self.turns.runs.item = None
        else:
            item_id, start = self.new_id("item"), self.commit_from_ms
        audio = self.history.between(start, end_ms)
        if audio.size == 0:
            return [self.err(*self.empty_commit, ev)]
        # Answered if it asks (response_create) or the session auto-responds (a
        # vLLM-Omni client's extra_body.auto_response); else response.create answers.
        # ``final: false`` is a commit like any other, as vLLM-Omni's runner has it.
        respond = self.native.commit_answers(ev)
        return self.commit_audio(item_id, audio, end_ms, respond, now, defer=True)

    def _client_clear(self, ev: dict[str, Any], now: float) -> list[Action]:
        out = self.turns.cleared(now)
        self.commit_from_ms = self.history.end_ms
        self.history.drop_before(self.commit_from_ms)
        return [*out, SendClient({"type": "input_audio_buffer.cleared"})]

    def _client_response_create(self, ev: dict[str, Any], now: float) -> list[Action]:
        busy, waiting = self.live(), bool(self.pending)
        no, metadata = self.refusals.response_create(ev, self.config, busy, waiting)
        if no is not None:
            return [self.err(*no)]
        self.metadata.asked(metadata, ev.get("event_id"))
        if self.merges_turns:  # GA: one response for every turn since the last
            return turn_answer.answer_all(self, now)
        return turn_answer.start_response(self, now)

    def _client_response_cancel(self, ev: dict[str, Any], now: float) -> list[Action]:
        no, cancels = self.refusals.response_cancel(self.response, ev)
        if no is not None or not cancels:
            return [self.err(*no)] if no is not None else []
        # Cut where it was heard, told only by the client's own truncate (GA).
        return self.cancel_response(now, reason="client_cancelled", announce=False)

    def on_vad(self, win: VadWindow) -> list[Action]:
        # Judged late (sent faster than real time), committed or cleared input is silence.
        gone = self.vad_timeline.to_input(win.end_sample) <= ms_to_sample(self.commit_from_ms)
        return super().on_vad(VadWindow(0.0, win.end_sample, win.now_ms) if gone else win)

    def on_tick(self, now: float) -> list[Action]:
        return super().on_tick(now) + turn_idle.step(self, now)

    def due_at(self) -> float | None:
        return turn_idle.deadline(self)

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), **self.idle.wire(), **told_run.wire(self.turns)}

    def restore(self, snap: dict[str, Any]) -> list[Action]:
        """Also the idle timer (a move goes on with the quiet where it was) and a user
        turn told begun (``shim/told_run.py``)."""
        restored = super().restore(snap)
        self.idle.restore(snap)
        told_run.restore(self.turns, self.gate, self.config.turn.vad is not None, snap)
        return restored

    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        td, audio = self.config.turn, self.history.between(start_ms, end_ms)
        respond, defer = td.create_response, not td.interrupt_response
        return self.commit_audio(item_id, audio, end_ms, respond, now, defer)

    def commit_audio(
        self, item_id: str, audio: Int16Array, end_ms: int, respond: bool, now: float, defer: bool
    ) -> list[Action]:
        return turn_answer.commit(self, item_id, audio, end_ms, respond, now, defer)

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None, announce: bool = True
    ) -> list[Action]:
        out = self.finish_response(now, "cancelled", reason, truncate_at, announce)
        if self.upstream_busy:
            self.upstream_busy = False
            out.append(AbortUpstream(reason=reason, redial=True))
            out += self.open_upstream()
        return out

    def finish_response(
        self,
        now: float,
        status: str,
        reason: str | None,
        truncate_at: int | None = None,
        announce: bool = True,
    ) -> list[Action]:
        """End the active response with ``status`` and every closing event GA expects."""
        resp = self.response
        assert resp is not None
        ended_early, told_done = status != "completed", resp.told_done
        resp.cancelled = ended_early
        if ended_early:
            resp.drop_held()
        text = self.final_text
        return close_response(resp, now, status, reason, truncate_at, text, told_done, announce)

    # ------------------------------------------------------------ upstream events
    def upstream_handlers(self) -> dict[str, EventHandler]:
        """Upstream event type -> handler; every other event passes through untouched."""
        return {
            "session.created": lambda ev, now: [],
            "response.output_audio.delta": partial(turn_upstream.audio, self),
            "transcription.delta": partial(turn_upstream.transcription_delta, self),
            "transcription.done": partial(turn_upstream.transcription_done, self),
            "response.output_audio.done": partial(turn_upstream.audio_done, self),
            "error": partial(turn_upstream.error, self),
        }

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        out: list[Action] = []
        if self.live():
            # Never silently: the response ends, saying why.
            out += self.finish_response(inp.now_ms, status="incomplete", reason="upstream_lost")
        self.upstream_busy = False
        out.append(AbortUpstream(reason="upstream lost", redial=True, after_loss=True))
        return out + self.open_upstream()
