"""The upstream's speech events reach a client on the client's own input timeline.

A duplex upstream times speech in ms of the audio it received. Through the barge-in
relay it does not receive all of the client's: the gate drops what it held over an
answer that was no barge-in, and a fresh upstream session after a loss counts from
zero. The client must still get ``audio_start_ms`` / ``audio_end_ms`` from the start
of all the audio it sent (``shim/upstream_timeline.py``). Real proxy, real reference
backend, a corpus clip streamed at real-time pace; the asserts are on audio time.
The first turn comes before any answer, so nothing can have been dropped before it:
its offset from the clip's start is the upstream's own reading of the clip's onset,
and every later turn must begin that far into its own clip.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pybase64
import pytest
from openai.types.realtime import RealtimeServerEvent
from pydantic import TypeAdapter

from proxy.reference import ReferenceOptions
from tests.native_client_session import NATIVE, opening, pcm16k
from tests.resume_client import until_fresh_upstream
from tests.servers import (
    Client,
    connect,
    host_port,
    load_clip,
    proxy,
    proxy_config,
    reference,
    silence,
    tcp_link,
    ws_url,
)

pytestmark = pytest.mark.timeout(120)

GA_EVENTS: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)
STARTED = "input_audio_buffer.speech_started"
STOPPED = "input_audio_buffer.speech_stopped"
CLIP = "utt00_clean.wav"
GAP_MS = 2500
TOLERANCE_MS = 200


class Mic:
    """A client's microphone at real-time pace, 20 ms an append; ``ms``: what it sent."""

    def __init__(self, c: Client, rate: int) -> None:
        self.c, self.rate, self.ms = c, rate, 0

    async def play(self, pcm: bytes) -> int:
        """Stream ``pcm``; where it began on the client's timeline (ms)."""
        began, step = self.ms, self.rate * 2 * 20 // 1000
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        for n, i in enumerate(range(0, len(pcm), step)):
            chunk = pcm[i : i + step].ljust(step, b"\0")
            audio = pybase64.b64encode(chunk).decode()
            await self.c.send({"type": "input_audio_buffer.append", "audio": audio})
            self.ms += 20
            await asyncio.sleep(max(0.0, t0 + (n + 1) * 0.02 - loop.time()))
        return began


@asynccontextmanager
async def reading(c: Client) -> AsyncIterator[None]:
    """Read ``c``'s events into ``c.events`` while the body streams."""

    async def read() -> None:
        with contextlib.suppress(ConnectionError, TimeoutError):
            while True:
                await c.recv(timeout=60)

    task = asyncio.create_task(read())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def assert_on_the_clients_timeline(c: Client, clip_starts: list[int]) -> None:
    """Each turn's speech events lie as far into its clip as the first turn's."""
    started = [e["audio_start_ms"] for e in c.of(STARTED)]
    stopped = [e["audio_end_ms"] for e in c.of(STOPPED)]
    assert len(started) == len(clip_starts) == len(stopped), (started, stopped, clip_starts)
    for name, got in (("audio_start_ms", started), ("audio_end_ms", stopped)):
        expected = [begin + got[0] for begin in clip_starts]
        off = [g - e for g, e in zip(got, expected, strict=True)]
        assert all(abs(d) <= TOLERANCE_MS for d in off), (name, got, expected)


async def test_a_ga_client_gets_speech_times_on_its_own_timeline_though_held_audio_went() -> None:
    """The gate drops what it held over each answer (no barge-in): ~1.3 s a turn here."""
    async with (
        reference("duplex-no-barge-in", reply_ms=1000) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base)) as c,
    ):
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
        mic, starts = Mic(c, 24000), []
        async with reading(c):
            for _ in range(3):
                starts.append(await mic.play(load_clip(CLIP) + silence(GAP_MS)))
            await asyncio.sleep(0.5)
        for ev in c.of(STARTED) + c.of(STOPPED):
            GA_EVENTS.validate_python(ev)  # as the openai SDK parses it
        assert_on_the_clients_timeline(c, starts)


async def test_a_native_client_gets_speech_times_on_its_own_timeline_after_a_fresh_upstream() -> (
    None
):
    """The upstream restarted: the fresh session it gets counts its audio from zero; so
    does its turn detector after an update naming turn detection."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("duplex-no-barge-in", reply_ms=1000, options=options) as up,
        reference("duplex-no-barge-in", reply_ms=1000, options=options) as restarted,
        tcp_link(up) as link,
        proxy(proxy_config({"m": link.url(up)})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening(turn_detection={"type": "server_vad"}))
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
        mic, starts = Mic(c, 16000), []
        speech = pcm16k(load_clip(CLIP) + silence(GAP_MS))
        async with reading(c):
            starts.append(await mic.play(speech))
            link.target = host_port(restarted)
            link.cut()
            await until_fresh_upstream(base)
            starts.append(await mic.play(speech))
            # Naming turn detection builds the upstream a fresh detector, its clock at zero.
            await c.send(opening(turn_detection={"type": "server_vad"}))
            starts.append(await mic.play(speech))
            await asyncio.sleep(0.5)
        assert_on_the_clients_timeline(c, starts)
