"""``duplex_emulated``: full duplex over a turn-based upstream.

The upstream speaks vLLM(-Omni)'s turn-based realtime dialect (DESIGN.md §4):
``session.update{model}``, ``input_audio_buffer.append{audio}`` (16 kHz PCM16),
``input_audio_buffer.commit{final}``, and it answers with ``transcription.delta``
(the assistant's text), ``response.output_audio.delta{audio, sample_rate_hz}``,
``transcription.done``, ``response.output_audio.done``. It has no cancel: the only
abort is closing the socket, so a barge-in drops it and redials for the next turn.

The client sees GA events: VAD turns, ``response.*`` with ids, cancellation.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shim import wire
from shim.actions import (
    AbortUpstream,
    Action,
    SendClient,
    SendClientAudio,
    SendUpstream,
)
from shim.audio import (
    PCM16,
    AudioError,
    AudioFormat,
    Int16Array,
    StreamResampler,
    b64decode,
    b64encode,
    decode_samples,
    encode_samples,
)
from shim.inputs import ClientEvent, UpstreamEvent, UpstreamLost
from shim.session import VAD_RATE, ClientHandler, EmulatedSession, ShimSettings

UpstreamHandler = Callable[[dict[str, Any], float], list[Action]]

UPSTREAM_RATE = 16000
DEFAULT_OUTPUT_RATE = 24000
# Largest audio chunk per upstream append (keeps frames well under size limits).
APPEND_CHUNK_SAMPLES = UPSTREAM_RATE


@dataclass
class PendingTurn:
    item_id: str
    audio: Int16Array


class TurnBasedSession(EmulatedSession):
    mode = "duplex_emulated"

    def __init__(
        self, session_id: str, model: str, upstream_model: str, settings: ShimSettings
    ) -> None:
        super().__init__(session_id, model, settings)
        self.upstream_model = upstream_model
        self.upstream_busy = False
        self.pending: deque[PendingTurn] = deque(maxlen=4)
        self.commit_from_ms = 0
        self._rs_out: StreamResampler | None = None
        self._rs_far: StreamResampler | None = None
        self._final_text: str | None = None
        self._upstream_table = self.upstream_handlers()

    # ------------------------------------------------------------ upstream session
    def open_upstream(self) -> list[Action]:
        """What a fresh upstream connection needs before it takes a turn."""
        return [SendUpstream({"type": "session.update", "model": self.upstream_model})]

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        out: list[Action] = []
        resp = self.response
        if resp is not None and not resp.cancelled and not resp.upstream_done:
            # Never silently: the response ends, saying why (DESIGN §6).
            out += self._finish(inp.now_ms, status="incomplete", reason="upstream_lost")
        self.upstream_busy = False
        out.append(AbortUpstream(reason="upstream lost", redial=True, after_loss=True))
        out += self.open_upstream()
        return out

    # ------------------------------------------------------------ client events
    def client_input_audio_buffer_commit(self, ev: dict[str, Any], now: float) -> list[Action]:
        end_ms = self.in_samples * 1000 // VAD_RATE
        if self.turn_item is not None:
            item_id, start = self.turn_item, self.turn_start_ms
            self.turn_item = None
        else:
            item_id, start = self.new_id("item"), self.commit_from_ms
        audio = self.audio_since(start, end_ms)
        if audio.size == 0:
            return [
                self.err("input_audio_buffer_commit_empty", "the input audio buffer is empty", ev)
            ]
        return self._commit(item_id, audio, end_ms, respond=False)

    def client_input_audio_buffer_clear(self, ev: dict[str, Any], now: float) -> list[Action]:
        self.turn_item = None
        self.episode = None
        self.commit_from_ms = self.in_samples * 1000 // VAD_RATE
        self.drop_audio_before(self.commit_from_ms)
        return [SendClient({"type": "input_audio_buffer.cleared"})]

    def client_response_create(self, ev: dict[str, Any], now: float) -> list[Action]:
        if not self.pending:
            return [
                self.err(
                    "response_create_without_input",
                    "no committed user audio is waiting for a response",
                    ev,
                )
            ]
        if (
            self.response is not None
            and not self.response.cancelled
            and not self.response.upstream_done
        ):
            return [
                self.err(
                    "conversation_already_has_active_response", "a response is in progress", ev
                )
            ]
        return self._start_response(now)

    def client_response_cancel(self, ev: dict[str, Any], now: float) -> list[Action]:
        resp = self.response
        rid = ev.get("response_id")
        if resp is None or resp.cancelled or (resp.upstream_done and not resp.held):
            return [
                self.err("response_cancel_not_active", "there is no active response to cancel", ev)
            ]
        if isinstance(rid, str) and rid != resp.response_id:
            return [self.err("response_cancel_not_active", f"response {rid!r} is not active", ev)]
        return self.cancel_response(now, reason="client_cancelled")

    def client_handlers(self) -> dict[str, ClientHandler]:
        return {
            **super().client_handlers(),
            "input_audio_buffer.commit": self.client_input_audio_buffer_commit,
            "input_audio_buffer.clear": self.client_input_audio_buffer_clear,
            "response.create": self.client_response_create,
            "response.cancel": self.client_response_cancel,
        }

    def client_other(self, inp: ClientEvent) -> list[Action]:
        # The turn-based dialect has no way to carry it: refuse it, and go on.
        kind = inp.event.get("type")
        return [
            self.err(
                "unsupported_event",
                f"event type {kind!r} is not supported over a turn-based upstream",
                inp.event,
                "type",
            )
        ]

    # ------------------------------------------------------------ turns
    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        audio = self.audio_since(start_ms, end_ms)
        return self._commit(
            item_id, audio, end_ms, respond=self.config.turn.create_response, now=now
        )

    def _commit(
        self, item_id: str, audio: Int16Array, end_ms: int, respond: bool, now: float = 0.0
    ) -> list[Action]:
        prev = self.last_item_id
        self.last_item_id = item_id
        self.commit_from_ms = end_ms
        self.drop_audio_before(end_ms)
        self.pending.append(PendingTurn(item_id, audio))
        item = wire.user_item(item_id)
        out: list[Action] = [
            SendClient(wire.committed(item_id, prev)),
            SendClient(wire.item_event("added", item, prev)),
            SendClient(wire.item_event("done", item, prev)),
        ]
        if respond:
            out += self._start_response(now)
        return out

    def _start_response(self, now: float) -> list[Action]:
        out: list[Action] = []
        old = self.response
        if old is not None and not old.cancelled and (not old.upstream_done or old.held):
            # A new turn supersedes a response still going: it ends, said so, first.
            out += self.cancel_response(now, reason="turn_detected")
        turn = self.pending.popleft()
        rid, aid = self.new_id("resp"), self.new_id("item")
        prev = self.last_item_id
        self.last_item_id = aid
        self.new_response(rid, aid)
        self._rs_out = self._rs_far = None
        self._final_text = None
        item = wire.assistant_item(aid, "in_progress", None)
        out += [
            SendClient(
                {"type": "response.created", "response": wire.response(rid, "in_progress", [])}
            ),
            SendClient(
                {
                    "type": "response.output_item.added",
                    "response_id": rid,
                    "output_index": 0,
                    "item": item,
                }
            ),
            SendClient(wire.item_event("added", item, prev)),
            SendClient(
                {
                    "type": "response.content_part.added",
                    **wire.part_ids(rid, aid),
                    "part": {"type": "audio", "transcript": ""},
                }
            ),
        ]
        if self.upstream_busy:
            # The previous generation is still running upstream and cannot be
            # interrupted in this dialect: drop that socket, take a fresh one.
            out.append(AbortUpstream(reason="new turn while generating", redial=True))
            out += self.open_upstream()
        self.upstream_busy = True
        out.append(SendUpstream({"type": "input_audio_buffer.commit", "final": False}))
        for i in range(0, max(turn.audio.size, 1), APPEND_CHUNK_SAMPLES):
            chunk = turn.audio[i : i + APPEND_CHUNK_SAMPLES]
            if chunk.size:
                out.append(
                    SendUpstream(
                        {"type": "input_audio_buffer.append", "audio": b64encode(chunk.tobytes())}
                    )
                )
        out.append(SendUpstream({"type": "input_audio_buffer.commit", "final": True}))
        return out

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]:
        out = self._finish(now, status="cancelled", reason=reason, truncate_at=truncate_at)
        if self.upstream_busy:
            self.upstream_busy = False
            out.append(AbortUpstream(reason=reason, redial=True))
            out += self.open_upstream()
        return out

    def _finish(
        self, now: float, status: str, reason: str | None, truncate_at: int | None = None
    ) -> list[Action]:
        """End the active response with ``status`` and every closing event GA expects."""
        resp = self.response
        assert resp is not None
        ended_early = status != "completed"
        resp.cancelled = ended_early
        if ended_early:
            resp.held, resp.held_ms = [], 0.0
        return self.close_response(resp, now, status, reason, truncate_at, self._final_text)

    # ------------------------------------------------------------ upstream events
    def upstream_handlers(self) -> dict[str, UpstreamHandler]:
        """Upstream event type -> handler; every other event passes through untouched."""
        return {
            "session.created": lambda ev, now: [],
            "response.output_audio.delta": self._up_audio,
            "transcription.delta": self._up_transcription_delta,
            "transcription.done": self._up_transcription_done,
            "response.output_audio.done": self._up_audio_done,
            "error": self._upstream_error,
        }

    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        kind = inp.event.get("type")
        handler = self._upstream_table.get(kind) if isinstance(kind, str) else None
        if handler is None:
            return [SendClient(inp.event)]
        return handler(inp.event, inp.now_ms)

    def _live(self) -> bool:
        resp = self.response
        return resp is not None and not resp.cancelled and not resp.upstream_done

    def _up_audio(self, ev: dict[str, Any], now: float) -> list[Action]:
        return self._audio(ev, now) if self._live() else []

    def _up_transcription_delta(self, ev: dict[str, Any], now: float) -> list[Action]:
        resp = self.response
        if resp is None or not self._live():
            return []
        delta = ev["delta"] if isinstance(ev.get("delta"), str) else ""
        return self.emit_text(
            SendClient(
                {
                    "type": "response.output_audio_transcript.delta",
                    **wire.part_ids(resp.response_id, resp.item_id),
                    "delta": delta,
                }
            ),
            delta,
        )

    def _up_transcription_done(self, ev: dict[str, Any], now: float) -> list[Action]:
        if self._live() and isinstance(ev.get("text"), str):
            self._final_text = ev["text"]
        return []

    def _up_audio_done(self, ev: dict[str, Any], now: float) -> list[Action]:
        live = self._live()
        self.upstream_busy = False
        return self._complete(now) if live else []

    def _audio(self, ev: dict[str, Any], now: float) -> list[Action]:
        resp = self.response
        assert resp is not None
        data = ev.get("audio", ev.get("delta"))
        rate = ev.get("sample_rate_hz")
        rate = rate if isinstance(rate, int) and rate > 0 else DEFAULT_OUTPUT_RATE
        if not isinstance(data, str):
            return []
        try:
            samples = decode_samples(b64decode(data), AudioFormat(PCM16, rate))
        except AudioError as exc:
            return [self.err("upstream_error", f"upstream sent undecodable audio: {exc}")]
        out_fmt = self.config.output_format
        if self._rs_out is None or self._rs_out.in_rate != rate:
            self._rs_out = StreamResampler(rate, out_fmt.rate_hz)
            self._rs_far = StreamResampler(rate, VAD_RATE, quality="QQ")
        assert self._rs_far is not None
        client = self._rs_out.process(samples)
        far = self._rs_far.process(samples) if self.echo is not None else None
        if client.size == 0:
            return []
        event = {
            "type": "response.output_audio.delta",
            **wire.part_ids(resp.response_id, resp.item_id),
            "delta": b64encode(encode_samples(client, out_fmt)),
        }
        return self.emit_audio(SendClientAudio(event, int(client.size), out_fmt.rate_hz, far), now)

    def _complete(self, now: float) -> list[Action]:
        resp = self.response
        assert resp is not None
        tail: list[Action] = []
        if self._rs_out is not None:
            rest = self._rs_out.flush()
            if rest.size:
                event = {
                    "type": "response.output_audio.delta",
                    **wire.part_ids(resp.response_id, resp.item_id),
                    "delta": b64encode(encode_samples(rest, self.config.output_format)),
                }
                tail += self.emit_audio(
                    SendClientAudio(event, int(rest.size), self.config.output_format.rate_hz, None),
                    now,
                )
        closing = self._finish(now, status="completed", reason=None)
        resp.cancelled = False
        resp.upstream_done = True
        if self.episode is not None:
            resp.held.extend(closing)
            return tail
        out = tail + closing
        if self.pending and self.config.turn.create_response:
            out += self._start_response(now)
        return out

    def _upstream_error(self, ev: dict[str, Any], now: float) -> list[Action]:
        live = self._live()
        err = ev.get("error")
        message = (
            err
            if isinstance(err, str)
            else str(err.get("message", ""))
            if isinstance(err, dict)
            else ""
        )
        code = ev.get("code") if isinstance(ev.get("code"), str) else "upstream_error"
        out: list[Action] = [SendClient(wire.error(str(code), f"upstream: {message}"))]
        if live:
            self.upstream_busy = False
            out += self._finish(now, status="failed", reason=str(code))
        return out
