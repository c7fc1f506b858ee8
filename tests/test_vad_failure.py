"""A VAD that cannot run a session's audio ends that session; it never leaves it deaf.

``VadRunner.submit`` hands a failed inference to the window's ``fail``; the session's
``VadFeed`` turns it into one ``Failed`` item on the session's queue, and the session's
``InputLoop`` raises it as if handling an input had failed (``internal_error``, the
session ends: ``proxy/emulated/runner.py``).
"""

from __future__ import annotations

import asyncio

import numpy as np

from proxy.emulated.feeders import VadFeed
from proxy.emulated.queue_items import Failed
from proxy.emulated.session_loop import InputLoop
from proxy.vad import WINDOW, VadRunner
from shim.actions import AnalyzeAudio
from shim.audio import Float32Array


def _broken(rows: Float32Array, state: Float32Array) -> tuple[Float32Array, Float32Array]:
    raise RuntimeError("model failed")


async def test_a_failed_inference_reaches_submit_s_fail_not_deliver() -> None:
    live = VadRunner()
    live._infer = _broken  # type: ignore[method-assign]
    heard: list[int] = []
    errors: list[Exception] = []
    failed = asyncio.Event()

    def fail(error: Exception) -> None:
        errors.append(error)
        failed.set()

    try:
        live.submit(
            live.new_stream(), np.zeros(WINDOW * 3, np.float32), lambda p, e: heard.append(e), fail
        )
        async with asyncio.timeout(30):
            await failed.wait()
    finally:
        await live.close()
    assert heard == []
    assert all(isinstance(e, RuntimeError) and str(e) == "model failed" for e in errors)


async def test_the_session_ends_when_its_vad_fails() -> None:
    live = VadRunner()
    live._infer = _broken  # type: ignore[method-assign]
    inputs: asyncio.Queue[object] = asyncio.Queue()
    feed = VadFeed(live, inputs)
    handled: list[object] = []
    failures: list[bool] = []

    async def step(item: object) -> bool:
        handled.append(item)
        return True

    loop = InputLoop(inputs, step, lambda: failures.append(True))
    try:
        for _ in range(3):
            await feed.analyze(AnalyzeAudio(np.zeros(WINDOW * 2, np.float32), 0))
        async with asyncio.timeout(30):
            await loop.run()  # returns: the Failed item ended it
    finally:
        feed.close()
        await live.close()
    assert failures == [True]
    assert not any(isinstance(item, Failed) for item in handled)
    assert loop.closed
