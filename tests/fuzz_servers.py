"""Servers on their own event loops, for the fuzz tests (tests/test_fuzz_*.py).

Hypothesis drives synchronous test functions, one example after another; the proxy and
the upstreams must outlive the examples and stay countable. So each runs on an event
loop of its own in a background thread: the proxy's loop holds nothing but the proxy,
and the tasks alive on it after a session ends are the proxy's own (a leak check). The
client of each example runs on the test thread with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings

from proxy.app import STATE, build_app
from proxy.config import Config
from proxy.state import ProxyState
from tests.servers import serve_app

T = TypeVar("T")

STEP_TIMEOUT_S = 10.0  # no single step of an example may take longer: a hang fails
SETTLE_S = 8.0  # how long the proxy may take to let go of a closed session
# Tasks that live as long as the process, whatever the sessions: the batched VAD
# runner starts with the first audio window any session analyses (proxy/vad.py).
PROCESS_TASKS = frozenset({"vad-runner"})

# Derandomized and small by default (CI: the same examples every run, in well under a
# minute); HYPOTHESIS_HUNT=1 explores fresh random examples, many more of them.
settings.register_profile(
    "fuzz-ci",
    max_examples=30,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz-hunt",
    max_examples=400,
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


HUNT = os.environ.get("HYPOTHESIS_HUNT", "") not in ("", "0")
# A hunt runs for as long as it needs; the derandomized run keeps the suite's limit.
fuzz_timeout = pytest.mark.timeout(0 if HUNT else 120)


def fuzz_settings(max_examples: int | None = None) -> settings:
    """The profile for this run (``HYPOTHESIS_HUNT=1``: hunt), optionally resized."""
    base = settings.get_profile("fuzz-hunt" if HUNT else "fuzz-ci")
    if max_examples is None or HUNT:
        return base
    return settings(base, max_examples=max_examples)


class LoopThread:
    """An event loop running in a daemon thread; coroutines are submitted to it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()
        self._stack = AsyncExitStack()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def enter(self, cm: AbstractAsyncContextManager[T]) -> T:
        """Enter ``cm`` on this loop; it is exited by ``close``."""
        return self.call(self._stack.enter_async_context(cm))

    def tasks(self) -> list[str]:
        """Names of the tasks alive on this loop (besides the one asking)."""

        async def names() -> list[str]:
            me = asyncio.current_task()
            return sorted(t.get_name() for t in asyncio.all_tasks() if t is not me)

        return self.call(names())

    def close(self) -> None:
        try:
            self.call(self._stack.aclose(), timeout=30)
        finally:

            async def cancel_rest() -> None:
                me = asyncio.current_task()
                rest = [t for t in asyncio.all_tasks() if t is not me]
                for t in rest:
                    t.cancel()
                await asyncio.gather(*rest, return_exceptions=True)

            with contextlib.suppress(Exception):
                self.call(cancel_rest(), timeout=10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


@dataclass
class ProxyUnderTest:
    """The proxy on its own loop: its base URL and a view of its state."""

    runner: LoopThread
    base: str
    state: ProxyState

    def census(self) -> dict[str, Any]:
        """What the proxy holds now: tasks, client sessions, live sessions, gauges."""

        async def read() -> dict[str, Any]:
            me = asyncio.current_task()
            registry = self.state.metrics.registry
            active = sum(
                s.value
                for metric in registry.collect()
                if metric.name == "duplex_proxy_sessions_active"
                for s in metric.samples
            )
            return {
                "tasks": sorted(
                    name
                    for t in asyncio.all_tasks()
                    if t is not me and (name := t.get_name()) not in PROCESS_TASKS
                ),
                "sessions": len(self.state.sessions),
                "live": len(self.state.live),
                "active_gauge": active,
            }

        return self.runner.call(read())

    def shim_faults(self) -> float:
        registry = self.state.metrics.registry
        return sum(
            s.value
            for metric in registry.collect()
            if metric.name == "duplex_proxy_shim_faults"
            for s in metric.samples
            if s.name.endswith("_total")
        )

    def settled(self, baseline: list[str], within_s: float = SETTLE_S) -> dict[str, Any]:
        """Wait until nothing of a closed session is left; the census either way."""
        deadline = time.monotonic() + within_s
        while True:
            now = self.census()
            clean = (
                now["sessions"] == 0
                and now["live"] == 0
                and now["active_gauge"] == 0
                and len(now["tasks"]) <= len(baseline)
            )
            if clean or time.monotonic() > deadline:
                return {**now, "clean": clean}
            time.sleep(0.05)


@contextlib.contextmanager
def proxy_thread(config: Config) -> Iterator[ProxyUnderTest]:
    runner = LoopThread("proxy-under-test")
    try:
        app = build_app(config)
        base = runner.enter(serve_app(app))
        yield ProxyUnderTest(runner, base, app[STATE])
    finally:
        runner.close()


@contextlib.contextmanager
def servers_thread(
    *contexts: Callable[[], AbstractAsyncContextManager[str]],
) -> Iterator[list[str]]:
    """Upstream servers (each an async context manager yielding a URL) on one loop."""
    runner = LoopThread("upstreams")
    try:
        yield [runner.enter(make()) for make in contexts]
    finally:
        runner.close()


def run_bounded(coro: Awaitable[T], within_s: float) -> T:
    """Run a client coroutine on the test thread; a hang is a failure, not a stuck run."""

    async def bounded() -> T:
        async with asyncio.timeout(within_s):
            return await coro

    return asyncio.run(bounded())
