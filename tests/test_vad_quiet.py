"""The VAD's quiet gate (``[vad] quiet_gate_dbfs``, ``proxy/vad.py``): after a run of
windows at or below the floor, the next ones report 0 without running Silero, in order
behind windows still in a batch, on every path (``process_sync``, ``process``,
``submit``); the state stays as the last window inferred left it; off, nothing changes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from proxy.config import load_config
from proxy.state import ProxyState
from proxy.vad import WINDOW, VadRunner
from proxy.vad_stream import CONTEXT, QUIET_AFTER
from shim.audio import Float32Array

FLOOR_DBFS = -60.0


def _voice(windows: int, seed: int = 0) -> Float32Array:
    rng = np.random.default_rng(seed)
    t = np.arange(WINDOW * windows) / 16000
    tone = 0.2 * np.sin(2 * np.pi * 180 * t) * (np.sin(2 * np.pi * 2 * t) > 0)
    return (tone + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def _hush(windows: int, dbfs: float = -70.0) -> Float32Array:
    """A noise floor whose peak stays at ``dbfs``."""
    x = np.random.default_rng(1).uniform(-1, 1, WINDOW * windows).astype(np.float32)
    return (x * np.float32(10 ** (dbfs / 20))).astype(np.float32)


QUIET = 40  # windows of the floor: QUIET_AFTER inferred, the rest answered by the gate
LOUD = 10


def _signal() -> Float32Array:
    return np.concatenate((_voice(20), _hush(QUIET), _voice(LOUD, seed=2)))


def test_quiet_windows_after_a_run_of_them_skip_the_model() -> None:
    plain, gated = VadRunner(), VadRunner(quiet_dbfs=FLOOR_DBFS)
    want = plain.process_sync(plain.new_stream(), _signal())
    stream = gated.new_stream()
    got = gated.process_sync(stream, _signal())
    assert [end for _, end in got] == [end for _, end in want]
    cut = 20 + QUIET_AFTER  # every window up to here ran the model, as without the gate
    assert got[:cut] == want[:cut]
    assert [p for p, _ in got[cut : 20 + QUIET]] == [0.0] * (QUIET - QUIET_AFTER)
    assert gated.stats.quiet_total == QUIET - QUIET_AFTER
    assert gated.stats.windows_total == len(want) - (QUIET - QUIET_AFTER)
    # The voice after it runs the model again, from the state the last inferred window
    # left: its probabilities are those of a stream that never saw the gated windows.
    ref = VadRunner()
    skip = ref.new_stream()
    x = _signal()
    kept = ref.process_sync(skip, x[: cut * WINDOW])
    skip._row[:CONTEXT] = x[(20 + QUIET) * WINDOW - CONTEXT : (20 + QUIET) * WINDOW]
    after = ref.process_sync(skip, x[(20 + QUIET) * WINDOW :])
    assert got[20 + QUIET :] == [(p, end + (QUIET - QUIET_AFTER) * WINDOW) for p, end in after]
    assert kept == want[:cut]


def test_a_window_above_the_floor_starts_the_run_again() -> None:
    gated = VadRunner(quiet_dbfs=FLOOR_DBFS)
    stream = gated.new_stream()
    blip = _hush(1, dbfs=-50.0)
    x = np.concatenate((_hush(QUIET_AFTER), blip, _hush(QUIET_AFTER), _hush(3)))
    got = gated.process_sync(stream, x)
    assert gated.stats.quiet_total == 3
    assert [p for p, _ in got[-3:]] == [0.0] * 3
    assert all(p > 0 for p, _ in got[: 2 * QUIET_AFTER + 1])


def test_off_by_default() -> None:
    runner = VadRunner()
    runner.process_sync(runner.new_stream(), np.zeros(WINDOW * 3 * QUIET_AFTER, np.float32))
    assert runner.stats.quiet_total == 0
    assert runner.stats.windows_total == 3 * QUIET_AFTER


@pytest.mark.parametrize("inline_rows", [0, 8], ids=["thread", "inline"])
async def test_submit_reports_in_order_behind_a_batch_in_flight(inline_rows: int) -> None:
    """A gated window queued behind windows still in a batch reports after them, with 0,
    and the probabilities are ``process_sync``'s whatever the chunking."""
    x = _signal()
    ref = VadRunner(quiet_dbfs=FLOOR_DBFS)
    want = ref.process_sync(ref.new_stream(), x)
    runner = VadRunner(quiet_dbfs=FLOOR_DBFS, gather_ms=2, inline_rows=inline_rows)
    for chunk in (WINDOW * 3 + 100, WINDOW * QUIET // 2, 320):
        stream, got, done = runner.new_stream(), [], asyncio.Event()

        def deliver(
            prob: float, end: int, got: list[tuple[float, int]] = got, done: asyncio.Event = done
        ) -> None:
            got.append((prob, end))
            if len(got) == len(want):
                done.set()

        for lo in range(0, x.size, chunk):
            runner.submit(stream, x[lo : lo + chunk], deliver)
            await asyncio.sleep(0)
        await asyncio.wait_for(done.wait(), 30)
        assert got == want
    await runner.close()


async def test_a_reset_in_a_gated_windows_report_drops_the_rest_of_the_call() -> None:
    """A gated window reports during ``submit``; its callback resets the stream (say, the
    session ended): the windows cut after it in that call are dropped, as a reset drops
    any window, and never report with the old stream's sample numbers."""
    runner = VadRunner(quiet_dbfs=FLOOR_DBFS)
    stream, got = runner.new_stream(), []
    runner.submit(stream, _hush(QUIET_AFTER), lambda p, e: got.append(e))
    async with asyncio.timeout(30):
        while stream.backlog:  # noqa: ASYNC110 (the runner's queue, polled)
            await asyncio.sleep(0.01)
    got.clear()

    def deliver(prob: float, end: int) -> None:
        got.append(end)
        if len(got) == 1:
            stream.reset()

    queued = runner.submit(stream, np.concatenate((_hush(1), _voice(3))), deliver)
    later = runner.submit(stream, _voice(2, seed=3), deliver)
    async with asyncio.timeout(30):
        while stream.backlog:  # noqa: ASYNC110 (the runner's queue, polled)
            await asyncio.sleep(0.01)
    await runner.close()
    assert queued == 0
    assert got == [(QUIET_AFTER + 1) * WINDOW, WINDOW, 2 * WINDOW]  # then the new stream's
    assert later == 2


async def test_gated_windows_report_in_order_when_a_callback_feeds_more() -> None:
    """The last window Silero runs lands with gated windows queued behind it; its callback
    submits more quiet audio: that window reports after the queued ones, not before."""
    runner = VadRunner(quiet_dbfs=FLOOR_DBFS, gather_ms=2)
    stream, got = runner.new_stream(), []

    def deliver(prob: float, end: int) -> None:
        got.append(end)
        if end == QUIET_AFTER * WINDOW:
            runner.submit(stream, _hush(1), deliver)

    runner.submit(stream, _hush(QUIET_AFTER + 2), deliver)
    async with asyncio.timeout(30):
        while len(got) < QUIET_AFTER + 3:  # noqa: ASYNC110 (a list filled by callbacks)
            await asyncio.sleep(0.01)
    await runner.close()
    assert got == [WINDOW * (i + 1) for i in range(QUIET_AFTER + 3)]


async def test_process_answers_the_gate_too() -> None:
    x = _signal()
    ref = VadRunner(quiet_dbfs=FLOOR_DBFS)
    want = ref.process_sync(ref.new_stream(), x)
    runner = VadRunner(quiet_dbfs=FLOOR_DBFS, gather_ms=1)
    stream, got = runner.new_stream(), []
    for lo in range(0, x.size, 1000):
        got += await runner.process(stream, x[lo : lo + 1000])
    assert got == want
    assert runner.stats.quiet_total == QUIET - QUIET_AFTER
    await runner.close()


def test_the_config_key_reaches_the_runner(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    route = '[[routes]]\nmodel = "a"\nupstream = "ws://127.0.0.1:9/v1/realtime"\n'
    path.write_text('[auth]\nmode = "none"\n' + route + "[vad]\nquiet_gate_dbfs = -60\n")
    assert ProxyState(config=load_config(path)).vad_runner().quiet_floor == pytest.approx(1e-3)
    path.write_text('[auth]\nmode = "none"\n' + route)
    assert ProxyState(config=load_config(path)).vad_runner().quiet_floor is None
