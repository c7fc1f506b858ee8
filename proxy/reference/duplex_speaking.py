"""The assistant's half of the stand-in model: who owns the turn, and its spoken answers.

Turn ownership is vLLM-Omni's ack-only policy (``session/helpers.py``
``response_in_progress`` / ``assistant_playback_active``): the assistant owns
the turn while it generates, and after that while the audio it sent is not
acknowledged by ``playback.ack`` (``sent_ms > committed_ms``).  Lenient
backends apply the playback half only once a client has sent an ack.
Committed user audio not yet answered is one turn, ``waiting``, as vLLM-Omni's runner
holds one ``committed_audio_payload`` (``engine/duplex/session/runner.py``): every
commit merges into it whatever it asks (``_defer_commit_behind_active_response``,
``_flush_and_submit_committed_turn``), and the last commit says whether it is answered
(``deferred_response_create``, ``answer_waiting`` here): at once, when the assistant
lets go, or only on ``response.create``.  No
commit is refused for waiting: vLLM-Omni's session manager counts a commit pending
(``max_pending_turns_per_session``) only until its runner takes it, and the
stand-in's runner takes each at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import numpy as np

from proxy.reference.conversation import Conversation
from proxy.reference.duplex_port import SessionPort, UserTurn
from proxy.reference.duplex_response import Response
from proxy.reference.options import FAULT_IGNORE_CANCEL
from proxy.reference.voice import plan_reply, reply_text

_MAX_REMEMBERED_RESPONSES = 32


def joined(first: UserTurn, then: UserTurn) -> UserTurn:
    """Two committed turns as one, as vLLM-Omni's ``merge_audio_payloads`` joins them."""
    audio = np.concatenate([first.audio, then.audio])
    return UserTurn(then.item_id, audio, first.speech_ms + then.speech_ms)


class Speaking:
    def __init__(self, port: SessionPort) -> None:
        self.port = port
        self._opts = port.options
        self._ack_owned = port.options.strict("strict_ack_ownership")
        self.conversation = Conversation()
        self.epoch = 0
        self.turn_id = 0
        self.turn_state = "idle"
        self.response: Response | None = None
        self.last_response: Response | None = None
        self.responses: dict[str, Response] = {}
        self.waiting: UserTurn | None = None
        self.answer_waiting = False
        self.acks_seen = False
        # The model's context locked (instructions fixed: ``duplex_config.py``) by the
        # first input it takes (``engine/duplex/session/append_task.py``, ``_submit``):
        # a turn answered, or an auto-responding session's first chunk (``duplex_model.py``).
        self.context_locked = False
        self.locks_context = port.options.strict("lock_instructions_after_input")
        self.unanswered_items = 0  # user items a text-only turn would answer
        self.replies = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._stream_task: asyncio.Task[None] | None = None

    # ---- turn ownership (ack-only policy) ----

    def owns_turn(self) -> bool:
        """The assistant owns the turn while generating, or while acks say it still plays."""
        if self.response is not None:
            return True
        last = self.last_response
        if last is None or last.cleared or last.playback.sent_ms <= last.playback.committed_ms:
            return False
        return self.acks_seen or self._ack_owned

    @property
    def audio_started(self) -> bool:
        """The current response's playback has audio, which fixes the voice
        (``session/control.py``): a fresh playback for each response and after a cut
        (``session/engine_session.py``, ``begin_response``, ``clear_playback_cursor``)."""
        latest = self.response or self.last_response
        return latest is not None and not latest.cleared and latest.playback.generated_ms > 0

    @property
    def playback(self) -> dict[str, object]:
        latest = self.response or self.last_response
        if latest is None:
            return {"generated_ms": 0, "sent_ms": 0, "played_ms": 0, "committed_ms": 0}
        return latest.playback.as_dict()

    # ---- responses ----

    def respond(self, turn: UserTurn) -> None:
        """``turn`` answered, with any audio waiting: now, or when the assistant lets go."""
        self.hold(turn, answer=True)
        self.maybe_next()

    def hold(self, turn: UserTurn, *, answer: bool) -> None:
        """``turn`` joins the audio waiting, and ``answer`` is now what becomes of it
        all: answered when the assistant lets go, or left for ``response.create``."""
        was = self.waiting
        self.waiting = joined(was, turn) if was is not None else turn
        self.answer_waiting = answer

    def take_waiting(self) -> UserTurn | None:
        turn, self.waiting, self.answer_waiting = self.waiting, None, False
        return turn

    def start_response(self, turn: UserTurn) -> None:
        self.context_locked = self.context_locked or self.locks_context
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
        if self.response is None and self.answer_waiting and not self.owns_turn():
            turn = self.take_waiting()
            if turn is not None:
                self.start_response(turn)

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
