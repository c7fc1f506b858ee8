"""The VAD's two ways to run a batch (``proxy/vad.py``): on its long-lived thread
(``proxy/vad_thread.py``) or, for batches of at most ``inline_rows`` windows, on the
loop's thread. Both give the probabilities of ``process_sync``, both fail their callers
when the model fails, and ``close`` drops what is still waiting or running."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable

import numpy as np
import pytest

from proxy.config_vad import VadConfig
from proxy.vad import WINDOW, VadRunner, VadStream
from shim.audio import Float32Array


def _speechy(seed: int, windows: int) -> Float32Array:
    rng = np.random.default_rng(seed)
    t = np.arange(WINDOW * windows) / 16000
    tone = 0.2 * np.sin(2 * np.pi * (150 + 40 * seed) * t) * (np.sin(2 * np.pi * 2 * t) > 0)
    return (tone + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def _broken(rows: Float32Array, state: Float32Array) -> tuple[Float32Array, Float32Array]:
    raise RuntimeError("model failed")


def test_a_runner_built_without_inline_rows_runs_as_deployed() -> None:
    """Benchmarks and tests that build ``VadRunner()`` measure the configured default."""
    default = inspect.signature(VadRunner).parameters["inline_rows"].default
    assert default == VadConfig().inline_rows


@pytest.mark.parametrize("inline_rows", [0, 3, 64], ids=["thread", "mixed", "inline"])
async def test_each_path_gives_the_unbatched_probabilities(inline_rows: int) -> None:
    signals = [_speechy(i, n) for i, n in enumerate([40, 30, 20, 10, 5])]  # batches of 5 to 1
    ref = VadRunner()
    want = [ref.process_sync(ref.new_stream(), x) for x in signals]
    runner = VadRunner(inline_rows=inline_rows, gather_ms=2)
    on_loop: list[bool] = []
    real = runner._infer

    def infer(rows: Float32Array, state: Float32Array) -> tuple[Float32Array, Float32Array]:
        on_loop.append(threading.current_thread() is threading.main_thread())
        assert on_loop[-1] == (rows.shape[0] <= inline_rows)
        return real(rows, state)

    runner._infer = infer  # type: ignore[method-assign]

    async def feed(x: Float32Array, chunk: int) -> list[tuple[float, int]]:
        stream, out = runner.new_stream(), []
        for lo in range(0, x.size, chunk):
            out += await runner.process(stream, x[lo : lo + chunk])
        return out

    try:
        got = await asyncio.gather(
            *(feed(x, c) for x, c in zip(signals, [320, 512, 1024, 777, 2048], strict=True))
        )
    finally:
        await runner.close()
    for have, expect in zip(got, want, strict=True):
        assert [e for _, e in have] == [e for _, e in expect]
        np.testing.assert_allclose([p for p, _ in have], [p for p, _ in expect], atol=1e-5)
    assert runner.stats.windows_total == 105
    assert (True in on_loop) == (inline_rows > 0)
    assert (False in on_loop) == (inline_rows < 5)


@pytest.mark.parametrize("inline_rows", [0, 64], ids=["thread", "inline"])
async def test_a_failed_batch_fails_its_callers_and_the_next_batch_runs(inline_rows: int) -> None:
    runner = VadRunner(inline_rows=inline_rows)
    real = runner._infer
    runner._infer = _broken  # type: ignore[method-assign]
    stream = runner.new_stream()
    try:
        with pytest.raises(RuntimeError, match="model failed"):
            await runner.process(stream, np.zeros(WINDOW, np.float32))
        runner._infer = real  # type: ignore[method-assign]
        out = await runner.process(runner.new_stream(), np.zeros(WINDOW * 2, np.float32))
    finally:
        await runner.close()
    assert [e for _, e in out] == [WINDOW, 2 * WINDOW]


async def test_close_drops_the_batch_running_on_the_thread() -> None:
    runner = VadRunner(inline_rows=0)
    real = runner._infer
    entered, release = threading.Event(), threading.Event()

    def slow(rows: Float32Array, state: Float32Array) -> tuple[Float32Array, Float32Array]:
        entered.set()
        release.wait(30)
        return real(rows, state)

    runner._infer = slow  # type: ignore[method-assign]
    heard: list[int] = []
    stream = runner.new_stream()
    waiting = asyncio.create_task(runner.process(stream, np.zeros(WINDOW * 2, np.float32)))
    runner.submit(runner.new_stream(), np.zeros(WINDOW, np.float32), lambda p, e: heard.append(e))
    assert await asyncio.to_thread(entered.wait, 30)
    await runner.close()
    assert await asyncio.wait_for(waiting, 30) == []  # dropped, not hung
    release.set()
    await asyncio.sleep(0.05)  # the thread's late reply, were it delivered, would land now
    await asyncio.to_thread(lambda: None)
    assert heard == []
    assert runner.stats.batches_total == 0
    with pytest.raises(RuntimeError, match="closed"):
        runner.submit(stream, np.zeros(WINDOW, np.float32), lambda p, e: None)


@pytest.mark.parametrize("inline_rows", [0, 64], ids=["thread", "inline"])
@pytest.mark.parametrize("raising", ["deliver", "fail"])
async def test_a_raising_callback_strands_no_other_stream(inline_rows: int, raising: str) -> None:
    """One stream's callback raises; the others in its batch still get their results,
    go on being batched, and the error reaches the loop's exception handler."""
    runner = VadRunner(inline_rows=inline_rows)
    real = runner._infer
    if raising == "fail":
        runner._infer = _broken  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()
    handled: list[BaseException | None] = []
    loop.set_exception_handler(lambda _loop, ctx: handled.append(ctx.get("exception")))
    a, b = runner.new_stream(), runner.new_stream()
    got: list[int | str] = []
    settled = asyncio.Event()

    def bug(*_: object) -> None:
        raise ValueError("session bug")

    def heard(item: int | str) -> None:
        got.append(item)
        if len(got) in (3, 4):
            settled.set()

    try:
        runner.submit(a, _speechy(1, 1), bug, bug)
        fail_b = lambda exc: heard(str(exc))  # noqa: E731
        runner.submit(b, _speechy(2, 3), lambda p, e: heard(e), fail_b)
        await asyncio.wait_for(settled.wait(), 30)
        settled.clear()
        runner._infer = real  # type: ignore[method-assign]
        runner.submit(b, _speechy(3, 1), lambda p, e: heard(e))  # b is still batched
        await asyncio.wait_for(settled.wait(), 30)
    finally:
        loop.set_exception_handler(None)
        await runner.close()
    first = [WINDOW, 2 * WINDOW, 3 * WINDOW] if raising == "deliver" else ["model failed"] * 3
    assert got == [*first, 4 * WINDOW]
    assert [type(e) for e in handled] == [ValueError]


def test_a_late_landing_on_an_old_open_loop_leaves_the_new_batch_alone() -> None:
    """A batch handed to the thread from a loop the runner has since left lands on that
    loop, still open, while the new loop's batch (the same stream's window again, and
    another's) waits on the thread: the late result must not be applied to it."""
    ref = VadRunner()
    x = _speechy(4, 1)
    want = ref.process_sync(ref.new_stream(), x)[0][0]
    runner = VadRunner(inline_rows=0)
    real_infer, real_land = runner._infer, runner._land
    gates = [threading.Event(), threading.Event()]
    lands: list[asyncio.AbstractEventLoop] = []

    entered: list[int] = []

    def gated(rows: Float32Array, state: Float32Array) -> tuple[Float32Array, Float32Array]:
        gate = gates[len(entered)]
        entered.append(rows.shape[0])
        gate.wait(30)
        return real_infer(rows, state)

    def counted(*args: object) -> None:
        lands.append(asyncio.get_running_loop())
        real_land(*args)  # type: ignore[arg-type]

    runner._infer = gated  # type: ignore[method-assign]
    runner._land = counted  # type: ignore[method-assign]
    s1, s2 = runner.new_stream(), runner.new_stream()
    got: list[tuple[str, float, int]] = []

    async def until(done: Callable[[], bool]) -> None:
        for _ in range(3000):
            if done():
                return
            await asyncio.sleep(0.01)

    async def submit(s: VadStream, name: str, launched: Callable[[], bool]) -> None:
        runner.submit(s, x, lambda p, e: got.append((name, p, e)))
        await until(launched)

    old, new = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        old.run_until_complete(submit(s1, "s1", lambda: entered == [1]))  # blocked on the thread
        new.run_until_complete(submit(s2, "s2", lambda: len(runner._inflight) == 2))  # queued
        gates[0].set()
        old.run_until_complete(until(lambda: old in lands))  # the late landing
        gates[1].set()
        new.run_until_complete(until(lambda: len(got) >= 2))
        new.run_until_complete(runner.close())
    finally:
        old.close()
        new.close()
    assert entered == [1, 2]
    assert sorted((n, e) for n, _, e in got) == [("s1", WINDOW), ("s2", WINDOW)]
    np.testing.assert_allclose([p for _, p, _ in got], [want, want], atol=1e-5)


@pytest.mark.parametrize("inline_rows", [0, 64], ids=["thread", "inline"])
async def test_a_streams_state_holds_only_its_own_row(inline_rows: int) -> None:
    """After a batch each stream keeps its own state, not a view of the batch's: a stream
    that goes idle must not keep every other row of its last batch alive."""
    runner = VadRunner(max_batch=16, gather_ms=5, inline_rows=inline_rows)
    streams = [runner.new_stream() for _ in range(16)]
    heard: list[int] = []
    try:
        for i, s in enumerate(streams):
            runner.submit(s, _speechy(i, 1), lambda p, e: heard.append(e))
        async with asyncio.timeout(30):
            while len(heard) < len(streams):  # noqa: ASYNC110 (a list filled by callbacks)
                await asyncio.sleep(0.01)
    finally:
        await runner.close()
    assert runner.stats.batches_total < len(streams)  # rows shared a call
    for s in streams:
        assert s._state.base is None, "a view of the batch's states"
        assert s._state.shape == (2, 1, 128)
