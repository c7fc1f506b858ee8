"""Ticks for an emulated session's shim, only while it may need one.

The shim's clock-driven decisions (``shim/turns.py`` ``on_tick``: the assistant
finished under the user's speech, a hold released after ``max_hold_ms``; the duplex
relay's "played out" report) all happen while the assistant speaks or its audio
plays, or an overlap is undecided: what ``EmulatedSession.wants_ticks`` says. So the
edge ticks every ``TICK_S`` from each input until ``keep_ms`` after it, goes on for
as long as the shim wants ticks, and then sleeps: an idle session has no timer at
all. An idle session's deadlines are single wakeups: the end of its disconnect grace
(``wake_in``), and the shim's own (``EmulatedSession.due_at``: GA's idle timeout), one
tick when it is due.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from proxy.clock import now_ms
from shim.inputs import Tick

TICK_S = 0.05
# Past the shim's longest clock-driven wait after an input (max_hold_ms, 3 s).
MIN_KEEP_MS = 5000.0


class Ticker:
    def __init__(
        self,
        inputs: asyncio.Queue[object],
        keep_ms: float,
        wanted: Callable[[float], bool],
        offer: Callable[[object], Awaitable[bool]] | None = None,
        due: Callable[[], float | None] | None = None,
    ) -> None:
        self.inputs = inputs
        # Hands a tick to an idle session at once, like a client frame (session_loop.py).
        self.offer = offer
        self.keep_ms = max(MIN_KEEP_MS, keep_ms)
        self.wanted = wanted
        self.due = due  # the shim's next deadline (ms, ``now_ms``), if it has one
        self._until = 0.0  # tick until then (ms, ``now_ms``)
        self._wake = asyncio.Event()
        self._timers: list[asyncio.TimerHandle] = []
        # Ticks fed to the shim so far, and set while no tick is scheduled.
        self.fed = 0
        self.dormant = asyncio.Event()

    def stir(self, now: float) -> None:
        """Something happened: the shim may need ticks for a while."""
        if now + self.keep_ms > self._until:
            self._until = now + self.keep_ms
            self._wake.set()

    def wake_in(self, delay_s: float) -> None:
        """One tick after ``delay_s`` (a deadline with nothing else going on)."""
        loop = asyncio.get_running_loop()
        self._timers = [t for t in self._timers if not t.cancelled()]
        self._timers.append(loop.call_later(delay_s, self._tick_now))

    def _tick_now(self) -> None:
        self.fed += 1
        self.inputs.put_nowait(Tick(now_ms()))

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()

    async def run(self) -> None:
        while True:
            now = now_ms()
            if now >= self._until and self.wanted(now):
                self._until = now + self.keep_ms
            if now >= self._until:
                self._wake.clear()
                self.dormant.set()
                stirred = await self._sleep(now)
                self.dormant.clear()
                if stirred:
                    continue
            else:
                await asyncio.sleep(TICK_S)
            self.fed += 1
            tick = Tick(now_ms())
            if self.offer is None or not await self.offer(tick):
                await self.inputs.put(tick)

    async def _sleep(self, now: float) -> bool:
        """Dormant until stirred (True), or until the shim's deadline (False: one tick)."""
        due = self.due() if self.due is not None else None
        if due is None:
            await self._wake.wait()
            return True
        try:  # never sooner than a tick: the shim may not have seen the last one yet
            async with asyncio.timeout(max(TICK_S, (due - now) / 1000)):
                await self._wake.wait()
        except TimeoutError:
            return False
        return True
