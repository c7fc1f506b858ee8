"""The Silero thread of ``proxy/vad.py``: one long-lived thread that runs each batch it
is handed and reports back to the event loop with one ``call_soon_threadsafe``.

It replaces ``loop.run_in_executor`` per batch, which cost on the way in a
``concurrent.futures`` future, a work item and the pool's bookkeeping, and on the way
back that future chained into an asyncio future and the wake-up of the task awaiting
it (docs/benchmarks.md, "Performance"). onnxruntime releases the GIL while it runs, so
the loop goes on with the sessions meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable

from proxy.vad_stream import Float32Array

Result = tuple[Float32Array, Float32Array]
Infer = Callable[[Float32Array, Float32Array], Result]
# Called on the loop with the batch's result, or with the error that inference raised.
Landed = Callable[[Result | None, Exception | None], None]
_Job = tuple[asyncio.AbstractEventLoop, Infer, Float32Array, Float32Array, Landed]


class InferenceThread:
    """Runs ``infer(rows, state)`` for each job in turn, off the loop's thread."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # A daemon: a process that never closed its runner still exits (the thread only
        # ever waits for a job or runs one).
        self._thread = threading.Thread(target=self._serve, name="silero", daemon=True)
        self._thread.start()

    def run(
        self,
        loop: asyncio.AbstractEventLoop,
        infer: Infer,
        rows: Float32Array,
        state: Float32Array,
        landed: Landed,
    ) -> None:
        """Queue one batch; ``landed`` is called on ``loop`` when it is done."""
        self._jobs.put((loop, infer, rows, state, landed))

    def stop(self) -> None:
        """The thread ends after the batch it may be running, whose result is dropped
        if the loop has closed meanwhile."""
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, infer, rows, state, landed = job
            result: Result | None = None
            error: Exception | None = None
            try:
                result = infer(rows, state)
            except Exception as exc:  # a broken model fails its callers, on the loop
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody to tell
                loop.call_soon_threadsafe(landed, result, error)
