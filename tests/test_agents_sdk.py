"""The OpenAI Agents SDK's realtime session through the proxy, as an application runs it.

The SDK stops playback and truncates (its ``audio_interrupted`` event) on every
``input_audio_buffer.speech_started`` while it has assistant audio: for it every
such event *is* an interruption. So through the proxy a backchannel and the
assistant's own echo must give none, and a real barge-in exactly one
(``docs/protocol.md``, "Overlap protocol"). The client streams its microphone at
real-time pace and plays what it receives on a real-time clock, feeding it back
into the microphone in the echo case (a client without echo cancellation).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any

import numpy as np
import pytest
from agents.realtime import RealtimeAgent, RealtimeRunner

from proxy.reference.options import ReferenceOptions
from tests.servers import ROOT, load_clip, proxy, proxy_config, reference, ws_url

sys.path.insert(0, str(ROOT / "bench"))
from agents_sdk_session import sdk_model_config

RATE = 24000
CHUNK = RATE * 20 // 1000  # 20 ms
OVERLAY_AFTER_S = 1.0  # into the answer
# A GA client over each upstream kind (strict stand-ins): over a duplex upstream that
# can barge in too, the proxy decides barge-in (shim/capabilities.py).
MODES = [
    ("duplex", "barge_in_emulated"),
    ("duplex-no-barge-in", "barge_in_emulated"),
    ("turn", "duplex_emulated"),
]
CASES = {
    "backchannel": ("backchannel00.wav", 0.0),  # "uh-huh"
    "echo": (None, 10 ** (-10 / 20)),  # the answer itself, -10 dB, 120 ms late
    "noise": ("noise_pink_05.wav", 0.0),
    "barge_in": ("utt03_clean.wav", 0.0),  # "Sorry to interrupt, but can you repeat ..."
}
ECHO_DELAY = RATE * 120 // 1000


def pcm(name: str) -> np.ndarray:
    return np.frombuffer(load_clip(name), dtype="<i2").astype(np.float32)


class Speaker:
    """Plays received audio in real time; flushed when the SDK interrupts playback."""

    def __init__(self) -> None:
        self.played: list[np.ndarray] = []  # what came out, 20 ms per mic chunk
        self.queue = np.zeros(0, dtype=np.float32)

    def add(self, data: bytes) -> None:
        self.queue = np.concatenate((self.queue, np.frombuffer(data, "<i2").astype(np.float32)))

    def tick(self) -> None:
        out = np.zeros(CHUNK, dtype=np.float32)
        head = self.queue[:CHUNK]
        out[: head.size] = head
        self.queue = self.queue[CHUNK:]
        self.played.append(out)

    def echo(self, gain: float) -> np.ndarray:
        """What the microphone picks up of the speaker now: ECHO_DELAY late."""
        if not gain or not self.played:
            return np.zeros(CHUNK, dtype=np.float32)
        heard = np.concatenate(self.played[-(ECHO_DELAY // CHUNK + 2) :])
        end = heard.size - ECHO_DELAY
        return gain * heard[max(0, end - CHUNK) : end] if end >= CHUNK else np.zeros(CHUNK)

    def flush(self) -> None:
        self.queue = np.zeros(0, dtype=np.float32)


async def run_sdk(kind: str, case: str) -> dict[str, Any]:
    """Ask a question, then play the case's overlay into the answer; count interruptions."""
    clip_name, echo_gain = CASES[case]
    overlay = pcm(clip_name) if clip_name else np.zeros(0, dtype=np.float32)
    prompt = pcm("utt00_clean.wav")
    agent = RealtimeAgent(name="assistant", instructions="Answer briefly.")
    runner = RealtimeRunner(agent)
    speaker = Speaker()
    seen: dict[str, Any] = {"first_audio": None, "overlay_at": None, "interrupted": 0, "log": []}
    async with (
        reference(kind, reply_ms=5000, options=ReferenceOptions(fidelity="strict")) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        session = await runner.run(model_config=sdk_model_config(ws_url(base)))
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        async def microphone() -> None:
            t0, n, pos = loop.time(), 0, 0
            while not stop.is_set():
                mic = np.zeros(CHUNK, dtype=np.float32)
                head = prompt[n * CHUNK : (n + 1) * CHUNK]
                mic[: head.size] += head
                first = seen["first_audio"]
                if first is not None and loop.time() >= first + OVERLAY_AFTER_S:
                    if seen["overlay_at"] is None:
                        seen["overlay_at"] = loop.time()
                        seen["log"].append((round(loop.time(), 2), "OVERLAY"))
                    part = overlay[pos : pos + CHUNK]
                    mic[: part.size] += part
                    pos += CHUNK
                speaker.tick()
                mic += speaker.echo(echo_gain)
                at = seen["overlay_at"]
                if at is not None and loop.time() > at + 6.0:
                    stop.set()  # the overlay and what it leads to are over
                await session.send_audio(np.clip(mic, -32768, 32767).astype("<i2").tobytes())
                n += 1
                await asyncio.sleep(max(0.0, t0 + n * 0.02 - loop.time()))

        async def events() -> None:
            async for event in session:
                if event.type == "raw_model_event":
                    data = event.data
                    if data.type == "raw_server_event":
                        seen["log"].append((round(loop.time(), 2), data.data.get("type")))
                elif event.type == "audio":
                    speaker.add(event.audio.data)
                    if seen["first_audio"] is None:
                        seen["first_audio"] = loop.time()
                        seen["log"].append((round(loop.time(), 2), "FIRST_AUDIO"))
                elif event.type == "audio_interrupted":
                    speaker.flush()  # as the SDK's applications do
                    if seen["overlay_at"] is not None:
                        seen["interrupted"] += 1
                    seen["log"].append((round(loop.time(), 2), "AUDIO_INTERRUPTED"))

        async with session:
            tasks = [asyncio.create_task(microphone()), asyncio.create_task(events())]
            try:
                async with asyncio.timeout(40):
                    await stop.wait()
            finally:
                stop.set()
                for task in tasks:
                    task.cancel()
                for task in tasks:
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
    assert seen["first_audio"] is not None, "the assistant answered"
    assert seen["overlay_at"] is not None, "the overlay was played"
    return seen


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "mode"),
    MODES,
    ids=[k for k, _ in MODES],
)
@pytest.mark.parametrize("case", ["backchannel", "echo", "noise"])
async def test_the_sdk_is_not_interrupted_by_a_backchannel_its_own_echo_or_noise(
    kind: str, mode: str, case: str
) -> None:
    seen = await run_sdk(kind, case)
    assert seen["interrupted"] == 0, f"{mode}: the SDK stopped playback on {case}"


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "mode"), MODES, ids=[k for k, _ in MODES])
async def test_the_sdk_is_interrupted_once_by_a_real_barge_in(kind: str, mode: str) -> None:
    seen = await run_sdk(kind, "barge_in")
    assert seen["interrupted"] == 1, f"{mode}: {seen['interrupted']} interruptions"
