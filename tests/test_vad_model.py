"""The real Silero model on the real corpus, through the batched runner and the gate."""

from __future__ import annotations

import asyncio
import json
import sys
import wave
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest

from proxy.vad import WINDOW, VadRunner
from shim.audio import Float32Array, StreamResampler, int16_to_float
from shim.vad_gate import SpeechStarted, SpeechStopped, VadGate, VadParams
from tests.corpus import CORPUS, needs_corpus

pytestmark = needs_corpus


def _manifest() -> list[dict[str, Any]]:
    if not (CORPUS / "manifest.json").exists():
        return []
    clips: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text())["clips"]
    return clips


CLIPS = _manifest()
SPEECH = [c for c in CLIPS if c["kind"] == "speech"]
NOISE = [c for c in CLIPS if c["kind"] == "noise"]
BACKCHANNEL = [c for c in CLIPS if c["kind"] == "backchannel"]


@cache
def load16k(name: str, pad_ms: int = 800) -> Float32Array:
    """A corpus clip at 16 kHz float32, with trailing silence so speech can stop."""
    with wave.open(str(CORPUS / name)) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (24000, 2, 1)
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)
    rs = StreamResampler(24000, 16000)
    x = np.concatenate((rs.process(pcm), rs.flush(), np.zeros(16 * pad_ms, dtype=np.int16)))
    return int16_to_float(x)


@pytest.fixture(scope="module")
def runner() -> VadRunner:
    return VadRunner()  # process_sync only: async tests make their own (one loop each)


def gate_events(probs: list[tuple[float, int]]) -> list[SpeechStarted | SpeechStopped]:
    gate = VadGate(VadParams())
    return [ev for p, end in probs for ev in gate.push(p, end)]


def test_model_loads_without_torch(runner: VadRunner) -> None:
    assert "torch" not in sys.modules
    assert "silero_vad" not in sys.modules


@pytest.mark.parametrize("clip", SPEECH, ids=lambda c: c["file"])
def test_speech_is_detected_near_the_labels(runner: VadRunner, clip: dict[str, Any]) -> None:
    events = gate_events(runner.process_sync(runner.new_stream(), load16k(clip["file"])))
    # Pauses inside an utterance are shorter than silence_duration_ms: one turn.
    assert [type(e) for e in events] == [SpeechStarted, SpeechStopped], events
    start, stop = events
    assert isinstance(start, SpeechStarted) and isinstance(stop, SpeechStopped)
    onset, end = clip["speech_ms"][0][0], clip["speech_ms"][-1][1]
    assert abs(start.audio_start_ms - onset) <= 100
    assert start.detected_ms - start.audio_start_ms <= 200  # min_speech_ms + one window
    assert end - 100 <= stop.audio_end_ms <= end + 300  # Silero lingers on the last phone
    assert stop.detected_ms - stop.audio_end_ms <= 500 + 32


@pytest.mark.parametrize("clip", NOISE, ids=lambda c: c["file"])
def test_noise_never_starts_speech(runner: VadRunner, clip: dict[str, Any]) -> None:
    probs = runner.process_sync(runner.new_stream(), load16k(clip["file"]))
    assert gate_events(probs) == []
    assert max(p for p, _ in probs) < VadParams().threshold


@pytest.mark.parametrize("clip", BACKCHANNEL, ids=lambda c: c["file"])
def test_backchannels_are_short_speech(runner: VadRunner, clip: dict[str, Any]) -> None:
    """The gate reports "uh-huh" as speech; not cutting on it is barge-in policy."""
    events = gate_events(runner.process_sync(runner.new_stream(), load16k(clip["file"])))
    assert [type(e) for e in events] == [SpeechStarted, SpeechStopped]
    start, stop = events
    assert isinstance(start, SpeechStarted) and isinstance(stop, SpeechStopped)
    assert abs(start.audio_start_ms - clip["speech_ms"][0][0]) <= 100
    assert stop.audio_end_ms - start.audio_start_ms < 800


def test_windows_count_samples_across_uneven_chunks(runner: VadRunner) -> None:
    x = load16k(SPEECH[0]["file"])
    whole = runner.process_sync(runner.new_stream(), x)
    stream = runner.new_stream()
    pieces: list[tuple[float, int]] = []
    for lo in range(0, x.size, 333):
        pieces += runner.process_sync(stream, x[lo : lo + 333])
    assert [e for _, e in pieces] == [WINDOW * (i + 1) for i in range(x.size // WINDOW)]
    np.testing.assert_allclose([p for p, _ in pieces], [p for p, _ in whole], atol=1e-6)
    # int16 input is accepted as well, and reset() restarts the count.
    stream.reset()
    pcm = (x[:2048] * 32768).astype(np.int16)
    again = runner.process_sync(stream, pcm)
    assert [e for _, e in again] == [512, 1024, 1536, 2048]
    np.testing.assert_allclose([p for p, _ in again], [p for p, _ in whole[:4]], atol=1e-3)


async def feed(runner: VadRunner, x: Float32Array, chunk: int) -> list[tuple[float, int]]:
    stream = runner.new_stream()
    out: list[tuple[float, int]] = []
    for lo in range(0, x.size, chunk):
        out += await runner.process(stream, x[lo : lo + chunk])
    return out


async def test_batched_equals_unbatched(runner: VadRunner) -> None:
    names = [c["file"] for c in (SPEECH[:4] + NOISE[:2] + BACKCHANNEL[:2])]
    expected = [runner.process_sync(runner.new_stream(), load16k(n)) for n in names]
    batched = VadRunner(max_batch=64)
    try:
        chunks = [320, 480, 512, 1000, 160, 2048, 640, 777]
        got = await asyncio.gather(
            *(feed(batched, load16k(n), c) for n, c in zip(names, chunks, strict=True))
        )
    finally:
        await batched.close()
    for want, have in zip(expected, got, strict=True):
        assert [e for _, e in have] == [e for _, e in want]
        np.testing.assert_allclose([p for p, _ in have], [p for p, _ in want], atol=1e-5)
    stats = batched.stats
    assert stats.windows_total == sum(len(w) for w in expected)
    assert stats.batches_total < stats.windows_total  # rows from several streams shared calls


async def test_max_batch_bounds_rows() -> None:
    runner = VadRunner(max_batch=3)
    try:
        x = np.zeros(WINDOW * 4, dtype=np.float32)
        results = await asyncio.gather(*(feed(runner, x, x.size) for _ in range(7)))
    finally:
        await runner.close()
    assert all(len(r) == 4 for r in results)
    assert runner.stats.windows_total == 28
    assert runner.stats.batches_total >= 28 / 3


async def test_reset_while_in_flight_drops_only_old_windows(runner: VadRunner) -> None:
    x = load16k(SPEECH[1]["file"])
    live = VadRunner()
    try:
        stream = live.new_stream()
        task = asyncio.create_task(live.process(stream, x))
        await asyncio.sleep(0)  # windows queued; the first batch may be running
        stream.reset()  # as a session closing mid-inference does
        dropped = await task
        assert len(dropped) < x.size // WINDOW
        # The stream starts over cleanly: same results as a brand-new one.
        fresh = await live.process(stream, x[:8192])
    finally:
        await live.close()
    want = runner.process_sync(runner.new_stream(), x[:8192])
    assert [e for _, e in fresh] == [e for _, e in want]
    np.testing.assert_allclose([p for p, _ in fresh], [p for p, _ in want], atol=1e-5)


async def test_cancelled_caller_does_not_wedge_the_stream() -> None:
    live = VadRunner()
    try:
        stream = live.new_stream()
        task = asyncio.create_task(live.process(stream, np.zeros(WINDOW * 20, np.float32)))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The cancelled call's windows still advance the stream, in order.
        more = await live.process(stream, np.zeros(WINDOW, np.float32))
        assert [e for _, e in more] == [WINDOW * 21]
    finally:
        await live.close()


async def test_close_releases_waiters_and_refuses_work() -> None:
    live = VadRunner()
    stream = live.new_stream()
    task = asyncio.create_task(live.process(stream, np.zeros(WINDOW * 50, np.float32)))
    await asyncio.sleep(0)
    await live.close()
    assert len(await task) < 50
    with pytest.raises(RuntimeError, match="closed"):
        await live.process(stream, np.zeros(WINDOW, np.float32))
    assert await VadRunner().process(live.new_stream(), np.zeros(100, np.float32)) == []


async def test_inference_errors_reach_the_caller_and_the_stream_goes_on() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        VadRunner(max_batch=0)
    live = VadRunner()
    infer = live._infer

    def broken(rows: Float32Array, state: Float32Array) -> tuple[Float32Array, Float32Array]:
        raise RuntimeError("model failed")

    try:
        stream = live.new_stream()
        live._infer = broken  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="model failed"):
            await live.process(stream, np.zeros(WINDOW, np.float32))
        live._infer = infer  # type: ignore[method-assign]
        assert [e for _, e in await live.process(stream, np.zeros(WINDOW, np.float32))] == [
            2 * WINDOW
        ]
    finally:
        await live.close()


async def test_submitted_windows_report_in_order_as_process_would(runner: VadRunner) -> None:
    names = [c["file"] for c in SPEECH[:3]]
    expected = [runner.process_sync(runner.new_stream(), load16k(n)) for n in names]
    live = VadRunner(max_batch=64)
    got: list[list[tuple[float, int]]] = [[] for _ in names]
    try:
        streams = [live.new_stream() for _ in names]
        xs = [load16k(n) for n in names]
        for lo in range(0, max(x.size for x in xs), 320):  # 20 ms appends, interleaved
            for i, (stream, x) in enumerate(zip(streams, xs, strict=True)):
                if lo < x.size:
                    live.submit(stream, x[lo : lo + 320], lambda p, e, i=i: got[i].append((p, e)))
            await asyncio.sleep(0)
        want = sum(len(w) for w in expected)
        await eventually(lambda: sum(len(g) for g in got) == want)  # every window reported
    finally:
        await live.close()
    for want, have in zip(expected, got, strict=True):
        assert [e for _, e in have] == [e for _, e in want]
        np.testing.assert_allclose([p for p, _ in have], [p for p, _ in want], atol=1e-5)


async def test_a_reset_drops_submitted_windows() -> None:
    live = VadRunner(max_batch=1)
    heard: list[int] = []
    try:
        stream = live.new_stream()
        assert live.submit(stream, np.zeros(WINDOW * 40, np.float32), lambda p, e: heard.append(e))
        assert stream.backlog == 40 and stream.fed == 40 * WINDOW
        stream.reset()  # as a session ending does
        assert stream.backlog == 0
        await asyncio.sleep(0.2)
        assert len(heard) < 40, "windows dropped by the reset never report"
        assert heard == sorted(heard)
        # The stream starts over: its windows count from zero again.
        live.submit(stream, np.zeros(WINDOW, np.float32), lambda p, e: heard.append(-e))
        await eventually(lambda: bool(heard) and heard[-1] == -WINDOW)
    finally:
        await live.close()


async def eventually(ok: Callable[[], bool], within_s: float = 30.0) -> None:
    async with asyncio.timeout(within_s):
        while not ok():  # noqa: ASYNC110 (a condition of plain values, polled)
            await asyncio.sleep(0.01)
