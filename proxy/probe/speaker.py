"""Speaking to an endpoint in real time, in its dialect.

Realtime dialect: a ``Mic`` streams audio continuously, as a microphone does --
silence, and an utterance when asked -- in ``chunk_ms`` appends at real-time pace
(chunk k leaves at start + k * chunk on the loop clock, so there is no drift).
Endpoints detect turns (server VAD or the model) from that stream.

Turn-based dialect: an utterance is ``commit{final:false}``, its
16 kHz appends at real-time pace, then ``commit{final:true}``; no stream between.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from proxy.probe.client import ProbeConnection
from proxy.probe.stimulus import REALTIME_RATE, TURN_RATE, Utterance
from proxy.probe.tracks import ResponseTrack
from shim.audio import PCM16, AudioFormat, Int16Array, StreamResampler, b64encode, encode_samples


@dataclass(slots=True)
class Speech:
    """One utterance on its way out; times are loop-clock seconds."""

    duration_s: float
    started: asyncio.Future[float] = field(default_factory=lambda: _future())
    finished: asyncio.Future[float] = field(default_factory=lambda: _future())

    async def onset(self) -> float:
        return await asyncio.shield(self.started)

    async def end(self) -> float:
        return await asyncio.shield(self.finished)


def _future() -> asyncio.Future[float]:
    return asyncio.get_running_loop().create_future()


def _settle(future: asyncio.Future[float], value: float) -> None:
    if not future.done():
        future.set_result(value)


class Voice:
    """What a check speaks through; ``say`` returns at once with a handle."""

    def __init__(self, conn: ProbeConnection, chunk_ms: int) -> None:
        self.conn = conn
        self.chunk_ms = chunk_ms

    def say(self, utterance: Utterance) -> Speech:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop speaking (pending utterances are abandoned)."""


class Mic(Voice):
    def __init__(self, conn: ProbeConnection, chunk_ms: int = 40, *, tag: str = "") -> None:
        super().__init__(conn, chunk_ms)
        #: With a ``tag``, every append carries ``event_id`` ``{tag}{n}`` and is kept in
        #: ``sent``, so it can be re-sent after a reconnect (the ``dedup`` check).
        self.tag = tag
        self.sent: list[dict[str, object]] = []
        self._step = REALTIME_RATE * chunk_ms // 1000
        # The format the session reads (handshake.py): PCM16 at 24 kHz, or its float input.
        declared = conn.info.input_format if conn.info is not None else None
        self._format = declared or AudioFormat(PCM16, REALTIME_RATE)
        self._resampler = StreamResampler(REALTIME_RATE, self._format.rate_hz)
        self._queue: deque[tuple[Int16Array, Speech]] = deque()
        self._task = asyncio.create_task(self._run(), name="probe-mic")

    def say(self, utterance: Utterance) -> Speech:
        speech = Speech(duration_s=utterance.duration_ms / 1000.0)
        if self._task.done():  # the connection is gone: nothing will be said
            now = asyncio.get_running_loop().time()
            _settle(speech.started, now)
            _settle(speech.finished, now)
        else:
            self._queue.append((utterance.pcm24, speech))
        return speech

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        index = 0
        current: tuple[Int16Array, Speech] | None = None
        pos = 0
        silence = np.zeros(self._step, dtype=np.int16)
        try:
            while not self.conn.ws.closed:
                if current is None and self._queue:
                    current, pos = self._queue.popleft(), 0
                chunk = silence
                if current is not None:
                    samples, speech = current
                    if pos == 0:
                        _settle(speech.started, loop.time())
                    chunk = samples[pos : pos + self._step]
                    pos += self._step
                    if chunk.size < self._step:
                        chunk = np.concatenate([chunk, silence[: self._step - chunk.size]])
                    if pos >= samples.size:
                        _settle(speech.finished, speech.started.result() + speech.duration_s)
                        current = None
                wire = encode_samples(self._resampler.process(chunk), self._format)
                event: dict[str, object] = {
                    "type": "input_audio_buffer.append",
                    "audio": b64encode(wire),
                }
                if self.tag:
                    event["event_id"] = f"{self.tag}{index}"
                    self.sent.append(event)
                await self.conn.send(event)
                index += 1
                delay = start + index * self.chunk_ms / 1000.0 - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
        finally:
            # Nobody waits forever on words that will never be said.
            pending = [current[1]] if current is not None else []
            for speech in pending + [speech for _, speech in self._queue]:
                _settle(speech.started, loop.time())
                _settle(speech.finished, loop.time())

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class TurnVoice(Voice):
    def __init__(self, conn: ProbeConnection, chunk_ms: int = 40) -> None:
        super().__init__(conn, chunk_ms)
        self._tasks: set[asyncio.Task[None]] = set()

    def say(self, utterance: Utterance) -> Speech:
        speech = Speech(duration_s=utterance.duration_ms / 1000.0)
        task = asyncio.create_task(self._speak(utterance.pcm16, speech), name="probe-turn-say")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return speech

    async def _speak(self, samples: Int16Array, speech: Speech) -> None:
        loop = asyncio.get_running_loop()
        step = TURN_RATE * self.chunk_ms // 1000
        await self.conn.send({"type": "input_audio_buffer.commit", "final": False})
        start = loop.time()
        _settle(speech.started, start)
        for index, pos in enumerate(range(0, samples.size, step)):
            delay = start + index * self.chunk_ms / 1000.0 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            chunk = samples[pos : pos + step]
            await self.conn.send(
                {"type": "input_audio_buffer.append", "audio": b64encode(chunk.tobytes())}
            )
        # The user stops talking at the end of the last chunk, not when it is sent.
        delay = start + speech.duration_s - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        await self.conn.send({"type": "input_audio_buffer.commit", "final": True})
        _settle(speech.finished, start + speech.duration_s)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task


def voice_for(conn: ProbeConnection, chunk_ms: int) -> Voice:
    assert conn.info is not None
    return TurnVoice(conn, chunk_ms) if conn.info.dialect == "turn" else Mic(conn, chunk_ms)


#: Signs that an endpoint takes turns by itself (server VAD or the model).
TURN_SIGNS = frozenset(
    {
        "input_audio_buffer.speech_started",
        "input_audio_buffer.committed",
        "overlap.decision",
        "response.created",
        "response.listen",
    }
)


async def nudge_if_deaf(conn: ProbeConnection, since: int) -> bool:
    """Commit and ask for a response if nothing since event ``since`` shows turn-taking.

    For endpoints with neither server VAD nor model-native turns (push-to-talk).
    Returns whether it nudged.
    """
    assert conn.info is not None
    if conn.info.dialect == "turn" or any(e.type in TURN_SIGNS for e in conn.events[since:]):
        return False
    await conn.send({"type": "input_audio_buffer.commit"})
    await conn.send({"type": "response.create"})
    return True


async def converse(
    conn: ProbeConnection,
    voice: Voice,
    utterance: Utterance,
    *,
    timeout_s: float = 10.0,
    manual_after_s: float = 3.0,
) -> tuple[Speech, ResponseTrack | None]:
    """Say ``utterance``; wait for the first audio of a response to it.

    An endpoint that shows no turn-taking of its own within ``manual_after_s`` of
    the end of speech gets an explicit commit + ``response.create``.
    """
    before = len(conn.tracker.order)
    since = len(conn.events)
    speech = voice.say(utterance)
    end = await speech.end()

    def answered() -> ResponseTrack | None:
        for track in conn.tracker.tracks(before):
            if track.first_audio_t is not None:
                return track
        return None

    nudged = False
    deadline = end + timeout_s
    while conn.now() < deadline and not conn.closed.is_set():
        if await conn.wait_until(lambda: answered() is not None, 0.1):
            break
        if not nudged and conn.now() > end + manual_after_s:
            nudged = True
            await nudge_if_deaf(conn, since)
    return speech, answered()
