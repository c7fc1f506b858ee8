"""The one place an emulated session's inputs are handled, one at a time, in order.

Inputs wait on the session's queue and the loop takes them. A client frame that
finds the queue empty and nothing in hand is handled at once by the task that read
it (``offer``): the same handling, without a pass through the queue and a switch to
the loop's task, which is most frames of a session keeping up. A lock keeps the two
paths from ever handling inputs at the same time; an input the loop has taken
waits for a frame being handled, which came first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from proxy.emulated.queue_items import Failed, Stop

# Handles one input; False: the session ends.
Step = Callable[[object], Awaitable[bool]]


class InputLoop:
    def __init__(self, inputs: asyncio.Queue[object], step: Step, failed: Callable[[], None]):
        self.inputs = inputs
        self._step, self._failed = step, failed
        self._lock = asyncio.Lock()
        self._in_hand = False  # the loop took an input and has not finished it
        self.closed = False
        self.inline: asyncio.Task[object] | None = None  # a frame's task while it handles it

    async def run(self) -> None:
        """Until a ``Stop``, a step that ends the session, or a failure (``failed``)."""
        try:
            while True:
                item = await self.inputs.get()
                self._in_hand = True
                try:
                    if isinstance(item, Stop) or self.closed:
                        return  # (closed: a frame handled in place ended the session)
                    if isinstance(item, Failed):
                        raise item.error
                    async with self._lock:
                        if not await self._step(item):
                            return
                finally:
                    self._in_hand = False
        except Exception:
            self._failed()
        finally:
            self.closed = True

    async def offer(self, item: object) -> bool:
        """Handle ``item`` (a client frame, a tick) now if nothing is queued or in hand;
        False: queue it."""
        if self.closed or self._in_hand or self._lock.locked() or not self.inputs.empty():
            return False
        self.inline = asyncio.current_task()
        try:
            async with self._lock:
                try:
                    go_on = await self._step(item)
                except Exception:
                    self._failed()
                    go_on = False
        finally:
            self.inline = None
        if not go_on:
            # The loop ends the session as if it had, before anything queued meanwhile.
            self.closed = True
            self.inputs.put_nowait(Stop())
        return True
