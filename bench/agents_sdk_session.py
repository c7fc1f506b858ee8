"""One session of ``bench/agents_sdk.py``: the OpenAI Agents SDK's ``RealtimeRunner`` through
the proxy, as an application runs it.

The client asks the corpus's question, plays the answer on a real-time loudspeaker (flushed
on the SDK's ``audio_interrupted``, as the SDK's applications do), and some time into the
answer plays the case's clip into its real-time microphone over it; an echo case feeds the
loudspeaker back into the microphone instead (a client without echo cancellation). Every
server event the SDK receives is validated against openai's ``RealtimeServerEvent``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, get_args

import numpy as np
from agents.realtime import RealtimeAgent, RealtimeRunner
from bargein_cases import RATE, Case
from bargein_speaker import Speaker
from openai.types.realtime import RealtimeServerEvent
from pydantic import BaseModel, ValidationError

CHUNK = RATE * 20 // 1000  # 20 ms of microphone per send
QUIET_S = 2.5  # the session ends this long after the last answer is done and played
NO_ANSWER_S = 4.0  # ... or this long after the last audio when no response.done comes
TIMEOUT_S = 45.0
ECHO_SPAN_S = 4.0  # an echo case's "clip" (the answer itself) counts as over after this


def _by_type() -> dict[str, type[BaseModel]]:
    """openai's model of each GA server event, by its ``type``."""
    union = get_args(RealtimeServerEvent)[0]  # Annotated[Union[...], discriminator]
    models: dict[str, type[BaseModel]] = {}
    for model in get_args(union):
        for value in get_args(model.model_fields["type"].annotation):
            models[value] = model
    return models


_EVENTS = _by_type()


def sdk_model_config(url: str) -> Any:
    """What the bench (and the SDK's test) give ``RealtimeRunner.run``: audio in and out
    as PCM16, the server's VAD, barge-ins that interrupt."""
    return {
        "url": url,
        "headers": {"Authorization": "Bearer unused"},
        "initial_model_settings": {
            "modalities": ["audio"],
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": {"type": "server_vad", "interrupt_response": True},
        },
    }


@dataclass
class Session:
    """What one session saw, times in seconds from its start."""

    case: Case
    after_s: float  # the clip starts this far into the answer
    first_audio: float | None = None
    stimulus_at: float | None = None
    stimulus_end: float | None = None
    interrupted_at: list[float] = field(default_factory=list)  # SDK audio_interrupted
    # ... and whether an answer was under way then: still coming (held by the proxy, or
    # streaming) or not yet played out; else it had played out, and the SDK interrupted
    # on a new turn's speech_started all the same
    interrupted_in_answer: list[bool] = field(default_factory=list)
    speech_started: int = 0  # after the stimulus began
    responses: dict[str, dict[str, Any]] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)  # event type -> first error
    invalid_events: int = 0
    sdk_errors: list[str] = field(default_factory=list)
    timeout: bool = False
    late_ms: float = 0.0  # how far the microphone fell behind real time at worst
    error: str | None = None

    @property
    def interruptions(self) -> int:
        """SDK ``audio_interrupted`` events after the stimulus began."""
        at = self.stimulus_at
        return 0 if at is None else sum(t >= at for t in self.interrupted_at)

    @property
    def interruptions_in_answer(self) -> int:
        """Those of them that came while an answer was under way."""
        at = self.stimulus_at
        pairs = zip(self.interrupted_at, self.interrupted_in_answer, strict=True)
        return 0 if at is None else sum(t >= at and during for t, during in pairs)

    @property
    def cut(self) -> bool:
        return any(r.get("status") == "cancelled" for r in self.responses.values())

    def answered_whole(self, reply_ms: int) -> bool:
        """The first answer completed with all its audio, and the SDK never stopped it."""
        first = next(iter(self.responses.values()), None)
        if first is None or first.get("status") != "completed":
            return False
        done = first.get("done_at")
        stopped = any(done is None or t <= done for t in self.interrupted_at)
        return abs(first["audio_ms"] - reply_ms) <= 1 and not stopped


def validate(ev: dict[str, Any], out: Session) -> None:
    """Count an event that is not a GA server event (openai's ``RealtimeServerEvent``)."""
    kind = str(ev.get("type"))
    model = _EVENTS.get(kind)
    why = None
    if model is None:
        why = "not a GA server event type"
    else:
        try:
            model.model_validate(ev)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            why = f"{exc.error_count()} errors, first at {where}: {err['msg']}"[:160]
    if why is not None:
        out.invalid_events += 1
        out.invalid.setdefault(kind, why)


async def run_session(
    url: str, case: Case, prompt: np.ndarray, after_s: float, reply_ms: int
) -> Session:
    out = Session(case, after_s)
    speaker = Speaker()
    t0 = time.monotonic()  # the speaker's clock too

    def now() -> float:
        return time.monotonic() - t0

    runner = RealtimeRunner(RealtimeAgent(name="assistant", instructions="Answer briefly."))
    session = await runner.run(model_config=sdk_model_config(url))
    stop = asyncio.Event()
    last_audio = [0.0]

    async def microphone() -> None:
        n, pos = 0, 0
        clip = case.clip
        while not stop.is_set():
            t_chunk = t0 + n * CHUNK / RATE
            mic = np.zeros(CHUNK, dtype=np.float32)
            head = prompt[n * CHUNK : (n + 1) * CHUNK]
            mic[: head.size] += head
            first = out.first_audio
            if first is not None and clip is not None and now() >= first + after_s:
                if out.stimulus_at is None:
                    out.stimulus_at = now()
                part = clip[pos : pos + CHUNK]
                mic[: part.size] += part
                pos += CHUNK
                if pos >= clip.size and out.stimulus_end is None:
                    out.stimulus_end = now()
            if case.echo_gain:
                heard = speaker.echo(t_chunk - case.echo_delay_ms / 1000, CHUNK, case.echo_path)
                mic += case.echo_gain * heard
            out.late_ms = max(out.late_ms, (time.monotonic() - t_chunk) * 1000)
            await session.send_audio(np.clip(mic, -32768, 32767).astype("<i2").tobytes())
            n += 1
            await asyncio.sleep(max(0.0, t0 + n * CHUNK / RATE - time.monotonic()))

    def response(rid: str) -> dict[str, Any]:
        return out.responses.setdefault(rid, {"status": None, "audio_ms": 0.0})

    async def events() -> None:
        async for event in session:
            t = now()
            if event.type == "raw_model_event" and event.data.type == "raw_server_event":
                ev = event.data.data
                validate(ev, out)
                kind = ev.get("type")
                if kind == "response.created":
                    response(ev["response"]["id"])["created_at"] = t
                elif kind in ("response.output_audio.delta", "response.audio.delta"):
                    b = base64.b64decode(ev.get("delta", ""))
                    response(str(ev.get("response_id")))["audio_ms"] += len(b) / 48.0
                elif kind == "response.done":
                    r = response(ev["response"]["id"])
                    r["status"], r["done_at"] = ev["response"].get("status"), t
                elif kind == "input_audio_buffer.speech_started":
                    if out.stimulus_at is not None and t >= out.stimulus_at:
                        out.speech_started += 1
            elif event.type == "audio":
                pcm = np.frombuffer(event.audio.data, "<i2").astype(np.float32)
                speaker.add(pcm, time.monotonic())
                last_audio[0] = t
                if out.first_audio is None:
                    out.first_audio = t
                    if case.clip is None:  # echo: the answer itself is the stimulus
                        out.stimulus_at = t
            elif event.type == "audio_interrupted":
                coming = any(r["status"] is None for r in out.responses.values())
                out.interrupted_in_answer.append(coming or speaker.play_end > time.monotonic())
                speaker.clear()
                out.interrupted_at.append(t)
            elif event.type == "error":
                out.sdk_errors.append(str(getattr(event, "error", event))[:200])

    def finished() -> bool:
        t = now()
        if out.first_audio is None:
            return False
        if case.clip is None and out.stimulus_end is None and t >= out.first_audio + ECHO_SPAN_S:
            out.stimulus_end = t
        if out.stimulus_end is None or speaker.play_end > time.monotonic():
            return False
        rs = list(out.responses.values())
        if rs and all(r["status"] is not None for r in rs):
            last = max(float(r["done_at"]) for r in rs)
            return t > max(last, out.stimulus_end, last_audio[0]) + QUIET_S
        return t > max(out.stimulus_end, last_audio[0]) + NO_ANSWER_S

    async with session:
        tasks = [asyncio.create_task(microphone()), asyncio.create_task(events())]
        try:
            while not finished():
                if now() > TIMEOUT_S:
                    out.timeout = True
                    break
                if tasks[1].done():  # the SDK's event stream ended
                    if not tasks[1].cancelled() and (exc := tasks[1].exception()):
                        out.error = f"events: {type(exc).__name__}: {exc}"[:300]
                    break
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
    if out.first_audio is None and out.error is None:
        out.error = "no answer from the assistant"
    return out
