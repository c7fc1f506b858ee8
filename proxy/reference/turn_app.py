"""Kind "turn": vLLM-Omni serving a model without a duplex adapter.

That is upstream vLLM's ``RealtimeConnection`` (handshake, events, errors)
with vLLM-Omni's audio-output ``_run_generation``:

* ``session.created`` is flat (``{type, id:"sess-<16hex>", created}``) and sent
  at once; query and headers are ignored;
* ``session.update{model}`` (top level) validates the model, no reply on success;
* appends are queued 16 kHz PCM16; ``commit{final:false}`` starts one generation
  that consumes queued and still-arriving audio until ``commit{final:true}``;
  a second ``final:false`` while generating is ignored silently;
* the reply streams ``transcription.delta`` and ``response.output_audio.delta
  {audio, format, sample_rate_hz}`` (plain ``json.dumps``), then
  ``transcription.done{text, usage}`` and ``response.output_audio.done{has_audio}``,
  and the queue is cleared (audio that arrived meanwhile is dropped);
* there is no cancel: closing the socket aborts; a binary frame drops the
  connection without a close frame.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import json
import time
import uuid
import weakref

import numpy as np
import numpy.typing as npt
import pybase64
from aiohttp import WSMsgType, web

from proxy.reference.gate import AudioGate
from proxy.reference.options import (
    FAULT_STARVE_SESSIONS,
    FAULT_UNBOUNDED_BUFFER,
    KIND_TURN,
    ReferenceOptions,
)
from proxy.reference.outbound import Outbound
from proxy.reference.voice import plan_reply, reply_text
from proxy.reference.wire import (
    DUPLEX_NOT_AVAILABLE,
    DUPLEX_TRUE,
    VAD_NOT_ENABLED,
    dumps,
    dumps_spaced,
    query_in,
    turn_error,
)
from shim.audio import b64encode

MAX_FRAME_BYTES = 16 * 1024 * 1024
#: ``VLLM_MAX_AUDIO_CLIP_FILESIZE_MB`` (25), compared with the sample count.
MAX_APPEND_SAMPLES = 25 * 1024 * 1024
_BOOL_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_BOOL_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})
_NOT_VALIDATED = (
    "Model not validated. Make sure to validate the model by sending a session.update event."
)


def _lax_bool(value: object, model: str, field: str) -> bool:
    """pydantic's lax bool coercion (``final: "true"`` and ``1`` work)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOL_TRUE | _BOOL_FALSE:
        return value.strip().lower() in _BOOL_TRUE
    raise ValueError(f"1 validation error for {model}\n{field}\n  Input should be a valid boolean")


class TurnBackend:
    def __init__(
        self, *, options: ReferenceOptions, reply_ms: int, served_model: str | None
    ) -> None:
        self.options = options
        self.reply_ms = reply_ms
        self.served_model = served_model
        self.gate = AudioGate(starve=options.has(FAULT_STARVE_SESSIONS))
        self.sockets: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()

    async def realtime(self, request: web.Request) -> web.StreamResponse:
        if query_in(request.query.get("duplex"), DUPLEX_TRUE, strip=False):
            ws = web.WebSocketResponse()
            await ws.prepare(request)
            await ws.send_str(dumps(VAD_NOT_ENABLED))
            await ws.close(code=1008)
            return ws
        return await TurnConnection(self).run(request)

    async def duplex(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(dumps(DUPLEX_NOT_AVAILABLE))
        await ws.close()
        return ws

    async def shutdown(self) -> None:
        for ws in list(self.sockets):
            await ws.close(code=1012, message=b"server shutdown")


class TurnConnection:
    def __init__(self, backend: TurnBackend) -> None:
        self.backend = backend
        self.options = backend.options
        self.validated = False
        self.queue: asyncio.Queue[npt.NDArray[np.int16] | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.replies = 0
        self.out: Outbound | None = None

    async def run(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_FRAME_BYTES)
        await ws.prepare(request)
        self.backend.sockets.add(ws)
        unbounded = self.options.has(FAULT_UNBOUNDED_BUFFER)
        out = Outbound(
            ws,
            request.transport,
            max_bytes=None if unbounded else self.options.max_outbound_bytes,
            on_drop=self._abort_generation,
        )
        self.out = out
        self.backend.gate.join(self)
        out.send(
            {
                "type": "session.created",
                "id": f"sess-{uuid.uuid4().hex[:16]}",
                "created": int(time.time()),
            }
        )
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    self._on_text(msg.data)
                elif msg.type == WSMsgType.BINARY:
                    out.abort()  # receive_text() raises; the handler returns without a close frame
                    break
        finally:
            self.backend.gate.leave(self)
            self.queue.put_nowait(None)
            self._abort_generation()
            if self.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self.task
            await out.finish(1.0)
        return ws

    def _send(self, payload: dict[str, object], *, spaced: bool = False) -> None:
        if self.out is not None:
            self.out.send_text(dumps_spaced(payload) if spaced else dumps(payload))

    def _error(self, message: str, code: str) -> None:
        self._send(turn_error(message, code))

    def _abort_generation(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def _on_text(self, raw: str) -> None:
        try:
            event = json.loads(raw)
        except ValueError:
            self._error("Invalid JSON", "invalid_json")
            return
        try:
            self._handle(event)
        except Exception as exc:  # upstream: any handling failure is processing_error
            self._error(str(exc), "processing_error")

    def _handle(self, event: dict[str, object]) -> None:
        kind = event.get("type")
        if kind == "session.update":
            model = event.get("model")
            if model is None:
                self._error("Missing required field: model", "invalid_event")
            elif (
                model
                and self.backend.served_model is not None
                and model != self.backend.served_model
            ):
                self._error(f"The model `{model}` does not exist.", "model_not_found")
            else:
                self.validated = True
        elif kind == "input_audio_buffer.append":
            self._append(event)
        elif kind == "input_audio_buffer.commit":
            if not self.validated:
                self._error(_NOT_VALIDATED, "model_not_validated")
                return
            if _lax_bool(event.get("final", False), "InputAudioBufferCommit", "final"):
                self.queue.put_nowait(None)
            elif self.task is None or self.task.done():
                self.task = asyncio.create_task(self._generate(), name="reference-turn-generation")
        else:
            self._error(f"Unknown event type: {kind}", "unknown_event")

    def _append(self, event: dict[str, object]) -> None:
        audio = event.get("audio")
        if not isinstance(audio, str):
            problem = "Field required" if audio is None else "Input should be a valid string"
            raise ValueError(f"1 validation error for InputAudioBufferAppend\naudio\n  {problem}")
        try:
            raw = pybase64.b64decode(audio)
            if not raw or len(raw) % 2:
                raise ValueError("Can't process empty audio." if not raw else "odd byte count")
            samples = np.frombuffer(raw, dtype="<i2").astype(np.int16)
        except (binascii.Error, ValueError):
            self._error("Invalid audio data", "invalid_audio")
            return
        if samples.size > MAX_APPEND_SAMPLES:
            self._error("Invalid audio data", "invalid_audio")
            return
        self.queue.put_nowait(samples)

    async def _generate(self) -> None:
        """Consume input until ``final:true``, then speak the reply in real time."""
        try:
            parts: list[npt.NDArray[np.int16]] = []
            while (item := await self.queue.get()) is not None:
                parts.append(item)
            heard = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)
            await self._speak(heard)
        finally:
            while not self.queue.empty():
                self.queue.get_nowait()

    async def _speak(self, heard: npt.NDArray[np.int16]) -> None:
        self.replies += 1
        heard_ms = heard.size / 16.0
        rate = self.options.output_rate_for(KIND_TURN)
        chunk_ms = self.options.chunk_ms_for(KIND_TURN)
        plan = plan_reply(
            heard,
            rate_hz=rate,
            reply_ms=self.backend.reply_ms,
            chunk_ms=chunk_ms,
            text=reply_text("turn-based", heard_ms, self.replies),
        )
        loop = asyncio.get_running_loop()
        start = loop.time()
        for index, chunk in enumerate(plan.chunks):
            delay = start + index * chunk_ms / 1000.0 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            start += await self.backend.gate.wait_turn(self)
            if chunk.text:
                self._send({"type": "transcription.delta", "delta": chunk.text})
            audio = {
                "type": "response.output_audio.delta",
                "audio": b64encode(chunk.pcm16),
                "format": "pcm16",
                "sample_rate_hz": rate,
            }
            self._send(audio, spaced=True)
        prompt_tokens = int(heard_ms // 80) + 1
        completion_tokens = len(plan.text.split())
        usage = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": None,
            "completion_tokens_details": None,
        }
        self._send({"type": "transcription.done", "text": plan.text, "usage": usage})
        self._send({"type": "response.output_audio.done", "has_audio": True}, spaced=True)


def add_turn_routes(app: web.Application, backend: TurnBackend) -> None:
    app.router.add_get("/v1/realtime", backend.realtime)
    app.router.add_get("/v1/duplex", backend.duplex)

    async def on_shutdown(_: web.Application) -> None:
        await backend.shutdown()

    app.on_shutdown.append(on_shutdown)
