"""The stand-in for a model-native duplex model: it listens, decides, speaks, yields.

What the real runner does, reduced to what reaches the wire (notes §3, §5, §8):

* it hears every append; its own detector (``speech_detector``) opens a user
  turn (``input_audio_buffer.speech_started``) and ends it after ``silence_ms``
  of silence, or on an explicit ``input_audio_buffer.commit``;
* a committed turn is answered with a real-time paced spoken response whose
  audio is the user's turn played back (``voice``);
* speech while the assistant owns the turn -- it is still generating, or the
  client's playback acks say audio is still playing (ack-only policy) -- is an
  *overlap*: kind "duplex" barges in after ``barge_in_overlap_ms``
  (``overlap.decision`` barge_in, response.done cancelled ``turn_detected``,
  epoch + 1), kind "duplex-no-barge-in" answers ``listen`` and keeps talking,
  and takes the overlapping speech as its next turn once it is done.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from proxy.reference.conversation import Conversation, UserCommit, emit_user_commit
from proxy.reference.duplex_input import DecodedAppend, InputTape
from proxy.reference.duplex_response import Response
from proxy.reference.options import (
    FAULT_DEAF_WHILE_SPEAKING,
    FAULT_IGNORE_CANCEL,
    KIND_DUPLEX,
    ReferenceOptions,
)
from proxy.reference.speech_detector import START, SpeechDetector
from proxy.reference.voice import plan_reply, reply_text

_PREFIX_MS = 300
_MAX_REMEMBERED_RESPONSES = 32


class SessionPort(Protocol):
    """What the model needs from its session (kept narrow: no transport here)."""

    id: str
    kind: str
    options: ReferenceOptions
    reply_ms: int

    @property
    def modalities(self) -> list[object]: ...

    @property
    def overlap_policy(self) -> str: ...

    def emit(self, event_type: str, fields: dict[str, object]) -> None: ...

    def emit_error(
        self, code: str, message: str, *, event_id: object = None, param: str | None = None
    ) -> None: ...

    def audio_turn(self) -> Awaitable[float]: ...


@dataclass(frozen=True, slots=True)
class UserTurn:
    item_id: str
    audio: npt.NDArray[np.int16]
    speech_ms: int


def _new_item_id() -> str:
    return f"item_{uuid.uuid4().hex}"


def _rms(samples: npt.NDArray[np.float32]) -> float:
    return float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if samples.size else 0.0


class DuplexModel:
    def __init__(self, port: SessionPort) -> None:
        self.port = port
        opts = port.options
        self._opts = opts
        self._barge_in = port.kind == KIND_DUPLEX
        self.detector = SpeechDetector(
            band_rms=opts.speech_band_rms,
            snr=opts.speech_snr,
            max_flatness=opts.speech_max_flatness,
            min_speech_ms=opts.min_speech_ms,
            silence_ms=opts.silence_ms,
        )
        self.tape = InputTape()
        self.conversation = Conversation()
        self.epoch = 0
        self.turn_id = 0
        self.turn_state = "idle"
        self.response: Response | None = None
        self.last_response: Response | None = None
        self.responses: dict[str, Response] = {}
        self.pending: deque[UserTurn] = deque()
        self.unanswered: UserTurn | None = None
        self.acks_seen = False
        self.audio_started = False
        self.replies = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._stream_task: asyncio.Task[None] | None = None
        # the user turn being heard
        self._item_id: str | None = None
        self._utterance_ms: int | None = None
        self._in_overlap = False
        self._overlap_ms = 0
        self._appended = False
        self._append_speech = False

    # ---- turn ownership (ack-only policy, session/helpers.py) ----

    def owns_turn(self) -> bool:
        """The assistant owns the turn while generating, or while acks say it still plays."""
        if self.response is not None:
            return True
        last = self.last_response
        if last is None or last.cleared or last.playback.sent_ms <= last.playback.committed_ms:
            return False
        return self.acks_seen or self._opts.strict_ack_ownership

    @property
    def playback(self) -> dict[str, object]:
        latest = self.response or self.last_response
        if latest is None:
            return {"generated_ms": 0, "sent_ms": 0, "played_ms": 0, "committed_ms": 0}
        return latest.playback.as_dict()

    # ---- input ----

    def on_append(self, decoded: DecodedAppend) -> None:
        if self._opts.has(FAULT_DEAF_WHILE_SPEAKING) and self.owns_turn():
            return
        samples = decoded.samples
        if samples.size == 0:
            return
        self._appended = True
        if _rms(samples) >= self._opts.append_speech_rms:
            self._append_speech = True
        self.tape.append(samples)
        if self._in_overlap and not self.owns_turn():
            self._in_overlap = False
            self._open_input()
        update = self.detector.feed(samples)
        for kind, ms in update.events:
            if kind == START:
                self._speech_start(ms)
            else:
                self._speech_stop(ms)
        if self._in_overlap and self.detector.active and update.speech_ms:
            self._overlap(update.speech_ms, int(decoded.duration_ms))

    def _open_input(self) -> None:
        if self._item_id is not None:
            return
        self._item_id = _new_item_id()
        start = self._utterance_ms if self._utterance_ms is not None else 0
        self.port.emit(
            "input_audio_buffer.speech_started", {"audio_start_ms": start, "item_id": self._item_id}
        )
        if self.response is None:
            self.turn_state = "user_speaking"

    def _speech_start(self, ms: int) -> None:
        self._utterance_ms = ms
        if self.owns_turn():
            self._in_overlap = True
            self._overlap_ms = 0
            if not self._barge_in:
                self._open_input()  # heard and buffered as the next turn
            return
        self._open_input()

    def _overlap(self, speech_ms: int, duration_ms: int) -> None:
        self._overlap_ms += speech_ms
        if not self._barge_in:
            self._decide("listen", "barge_in_unsupported", duration_ms)
            return
        if self._overlap_ms < self._opts.barge_in_overlap_ms:
            self._decide("listen", "accumulating_overlap_speech", duration_ms)
            return
        self._decide(
            "barge_in", "server_vad_speech_started", duration_ms, cancel_reason="turn_detected"
        )
        self._in_overlap = False
        self.stop_assistant("turn_detected")
        self._open_input()

    def _decide(self, action: str, reason: str, duration_ms: int, cancel_reason: str = "") -> None:
        policy = self.port.overlap_policy
        details: dict[str, object] = {
            "type": "overlap.decision",
            "session_id": self.port.id,
            "epoch": self.epoch,
            "policy": policy,
            "action": action,
            "reason": reason,
        }
        if cancel_reason:
            details["cancel_reason"] = cancel_reason
        details.update(
            duration_ms=duration_ms, overlap_speech_ms=self._overlap_ms, buffer_audio=True
        )
        self.port.emit(
            "overlap.decision",
            {
                "session_id": self.port.id,
                "epoch": self.epoch,
                "policy": policy,
                "action": action,
                "reason": reason,
                "metadata": details,
            },
        )

    def _speech_stop(self, stop_ms: int) -> None:
        if self._in_overlap:
            self._in_overlap = False
            if self.owns_turn():
                if self._barge_in:
                    self.reset_input()  # a backchannel too short to cut in: dropped
                    return
                self._queue(self._commit(stop_ms, deferred=True))
                return
            self._open_input()
        self._respond(self._commit(stop_ms))

    def reset_input(self) -> None:
        self._item_id = None
        self._utterance_ms = None
        self._in_overlap = False
        self._appended = False
        self._append_speech = False
        self.detector.reset()
        self.tape.clear()

    def _commit(
        self, stop_ms: int | None, *, deferred: bool = False, is_speech: bool = True
    ) -> UserTurn:
        """Commit the heard input as a user item (commit sequence, notes §8)."""
        item_id = self._item_id or _new_item_id()
        if self._item_id is not None:
            self.port.emit(
                "input_audio_buffer.speech_stopped",
                {"audio_end_ms": stop_ms or 0, "item_id": item_id},
            )
        end = stop_ms if stop_ms is not None else self.tape.end_ms
        start = 0 if self._utterance_ms is None else max(0, self._utterance_ms - _PREFIX_MS)
        audio = self.tape.slice(start, end) if is_speech else np.zeros(0, dtype=np.int16)
        speech_ms = audio.size // 16
        transcript = f"({speech_ms / 1000:.1f} s of speech)" if is_speech else ""
        self.turn_id += 1
        emit_user_commit(
            self.port.emit,
            self.conversation,
            UserCommit(
                session_id=self.port.id,
                item_id=item_id,
                transcript=transcript,
                is_speech=is_speech,
                turn_id=self.turn_id,
                epoch=self.epoch,
                deferred=deferred,
            ),
        )
        if not deferred:
            for response in self.responses.values():
                response.superseded = response.superseded or response.done
        self.reset_input()
        if self.response is None:
            self.turn_state = "user_committed"
        return UserTurn(item_id=item_id, audio=audio, speech_ms=speech_ms)

    def on_commit(self, create_response: bool | None, event_id: object) -> None:
        if not self._appended and self._item_id is None:
            self.port.emit_error(
                "input_audio_buffer_empty",
                "input_audio_buffer.commit requires a non-empty input audio buffer",
                event_id=event_id,
            )
            return
        if not (self._append_speech or self._item_id is not None):
            self._commit(None, is_speech=False)
            return
        deferred = self.owns_turn()
        turn = self._commit(None, deferred=deferred)  # speech_stopped says audio_end_ms 0
        if create_response is False:
            self.unanswered = turn
            return
        self._respond(turn)

    def on_clear_input(self) -> None:
        self.reset_input()
        self.port.emit("input_audio_buffer.cleared", {})

    # ---- responses ----

    def _respond(self, turn: UserTurn) -> None:
        if self.owns_turn() or self.pending:
            self._queue(turn)
        else:
            self.start_response(turn)

    def _queue(self, turn: UserTurn) -> None:
        if len(self.pending) >= self._opts.max_pending_turns:
            self.port.emit_error("input_backpressure", "Duplex session has too many pending turns")
            return
        self.pending.append(turn)

    def start_response(self, turn: UserTurn) -> None:
        self.replies += 1
        opts = self._opts
        text = reply_text(self.port.kind, turn.speech_ms, self.replies)
        plan = plan_reply(
            turn.audio,
            rate_hz=opts.output_rate_for(self.port.kind),
            reply_ms=self.port.reply_ms,
            chunk_ms=opts.chunk_ms_for(self.port.kind),
            text=text,
        )
        response = Response(
            session_id=self.port.id,
            epoch=self.epoch,
            turn_id=self.turn_id,
            plan=plan,
            modalities=list(self.port.modalities),
            emit=self.port.emit,
            conversation=self.conversation,
        )
        self.response = response
        self.responses[response.id] = response
        while len(self.responses) > _MAX_REMEMBERED_RESPONSES:
            del self.responses[next(iter(self.responses))]
        self.turn_state = "assistant_generating"
        self.audio_started = True
        response.start()
        self._stream_task = self._spawn(self._stream(response))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=f"reference-response-{self.port.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _stream(self, response: Response) -> None:
        """Real-time pacing on the event loop clock: chunk i leaves at start + i * chunk."""
        loop = asyncio.get_running_loop()
        step = self._opts.chunk_ms_for(self.port.kind) / 1000.0
        start = loop.time()
        for index, chunk in enumerate(response.plan.chunks):
            delay = start + index * step - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            start += await self.port.audio_turn()
            response.send_chunk(chunk)
        if self.response is response:
            self.response = None
            self.last_response = response
            self.turn_state = "assistant_playing" if self.owns_turn() else "idle"
            self.maybe_next()

    def maybe_next(self) -> None:
        if self.response is None and self.pending and not self.owns_turn():
            self.start_response(self.pending.popleft())

    def cancel_live(self, reason: str) -> bool:
        """End the response being generated as cancelled; the epoch moves on."""
        response = self.response
        if response is None:
            return False
        self.response = None
        self.last_response = response
        self.epoch += 1
        response.cancel(reason, new_epoch=self.epoch)
        if not self._opts.has(FAULT_IGNORE_CANCEL) and self._stream_task is not None:
            self._stream_task.cancel()  # the fault leaves it streaming after response.done
        self.turn_state = "idle"
        return True

    def stop_assistant(self, reason: str) -> bool:
        """Cut the assistant: cancel a live response, or stop a finished one still playing."""
        if self.cancel_live(reason):
            return True
        if self.owns_turn() and self.last_response is not None:
            self.epoch += 1
            self.last_response.cleared = True
            self.port.emit("output_audio_buffer.cleared", {"response_id": self.last_response.id})
            self.turn_state = "idle"
            return True
        return False

    def cancel_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        self.cancel_tasks()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
