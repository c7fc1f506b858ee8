"""The VAD runner's batches: every session's next window in one Silero call.

One window costs far more in per-call overhead than in arithmetic, so running the
windows of many sessions as rows of one call is much cheaper than one call each (see
``bench/vad_cost.py``). State is sequential, so a batch takes at most one window per
stream (``proxy/vad_stream.py``); the next window of a stream waits for the next batch.
A submission arms a timer (no task, no polling) and, after ``gather_ms`` (``[vad]
gather_ms``: live sessions' windows arrive spread out, so a call as soon as one is ready
would hold one or two), the batch takes whatever is pending; windows that arrive while a
batch runs form the next one. Inference runs on one long-lived thread
(``proxy/vad_thread.py``; onnxruntime releases the GIL) so the event loop does not block
on it, except for batches of at most ``inline_rows`` windows (``[vad] inline_rows``),
which run on the loop's thread: there a small batch costs less than its hand-over to the
thread and back. Each result goes back to its stream's state and its window's caller
(``proxy/vad.py`` takes the windows in).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque

import numpy as np

from proxy.metrics import Metrics
from proxy.vad_model import SileroModel
from proxy.vad_stream import Float32Array, VadStream, Window
from proxy.vad_thread import InferenceThread, Result

Batch = list[tuple[VadStream, Window, int]]  # each stream's head window, its generation


class VadBatches:
    """Batches of every stream's head window through one Silero model; see above."""

    def __init__(
        self,
        model_path: str | None = None,
        *,
        max_batch: int = 64,
        threads: int = 1,
        metrics: Metrics | None = None,
        gather_ms: float = 0.0,
        inline_rows: int = 8,
        quiet_dbfs: float | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._model = SileroModel(model_path, threads, metrics)
        self.max_batch = max_batch
        # Before each inference, wait this long for more sessions' windows (see _run).
        self.gather_s = gather_ms / 1000
        self.stats = self._model.stats
        self._metrics = metrics
        self._ready: deque[VadStream] = deque()  # streams with queued windows, not in a batch
        self._queued: set[int] = set()  # ids of streams in _ready or in the running batch
        # Batches of up to this many windows run on the loop's thread (see _launch).
        self.inline_rows = inline_rows
        self.quiet_floor = None if quiet_dbfs is None else 10 ** (quiet_dbfs / 20)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | asyncio.Handle | None = None  # the next batch
        self._thread: InferenceThread | None = None
        self._closed = False
        self._inflight: Batch = []  # the batch running

    def _infer(self, rows: Float32Array, state: Float32Array) -> Result:
        return self._model.infer(rows, state)

    def _pass(self, end: int) -> tuple[float, int]:
        """A window the quiet gate answers: 0, and the stream's state stays as it is."""
        self.stats.quiet_total += 1
        return 0.0, end

    def _enqueue(self, stream: VadStream) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # First use, or a new loop: the old one's timer and reply do not come here (a
            # late reply there is ignored, see _land), so a batch running there goes into
            # the next one.
            self._ready.extend(s for s, _, _ in self._inflight)
            self._loop, self._timer, self._inflight = loop, None, []
        if id(stream) not in self._queued:
            self._queued.add(id(stream))
            self._ready.append(stream)
        self._kick()

    def _kick(self) -> None:
        """Arm the next batch unless one runs or is armed: after ``gather_ms`` (more
        sessions' windows come), or at the loop's next turn when that is 0 or the
        batch is full already."""
        if self._inflight or self._timer is not None or self._loop is None:
            return
        if self.gather_s > 0 and len(self._ready) < self.max_batch:
            self._timer = self._loop.call_later(self.gather_s, self._launch)
        else:
            self._timer = self._loop.call_soon(self._launch)

    def _launch(self) -> None:
        self._timer = None
        batch = self._take_batch()
        if not batch or self._loop is None:
            return
        rows = np.stack([w.row for _, w, _ in batch])
        state = np.concatenate([s._state for s, _, _ in batch], axis=1)
        self._inflight = batch
        if len(batch) <= self.inline_rows:
            # Cheaper than the hand-over to the thread and back; stalls the loop for it.
            try:
                result = self._infer(rows, state)
            except Exception as exc:  # a broken model must fail its callers, not hang them
                self._land(batch, None, exc)
            else:
                self._land(batch, result, None)
            return
        if self._thread is None:
            self._thread = InferenceThread()
        self._thread.run(self._loop, self._infer, rows, state, functools.partial(self._land, batch))

    def _land(self, batch: Batch, result: Result | None, error: Exception | None) -> None:
        if batch is not self._inflight or self._closed:
            # Closed meanwhile (its windows were dropped), or a batch of a loop the runner
            # has left, landing there late: its windows went into a batch of the new loop.
            return
        self._inflight = []
        if error is None:
            self.stats.batches_total += 1
            self.stats.windows_total += len(batch)
        try:
            self._scatter(batch, result, error)
        finally:
            if self._ready:
                self._kick()

    def _take_batch(self) -> Batch:
        """The head window of up to ``max_batch`` ready streams, oldest first."""
        batch: Batch = []
        while self._ready and len(batch) < self.max_batch:
            stream = self._ready.popleft()
            if stream._pending:
                batch.append((stream, stream._pending[0], stream._generation))
            else:
                self._queued.discard(id(stream))  # reset() emptied it meanwhile
        return batch

    def _scatter(self, batch: Batch, result: Result | None, error: Exception | None) -> None:
        """The runner's bookkeeping for every stream of the batch first, then each
        window's callback or future: a callback that raises goes to the loop's exception
        handler, and the other streams still get theirs and their next batch."""
        landed: list[tuple[VadStream, Window, int, float | None]] = []
        for i, (s, w, gen) in enumerate(batch):
            self._queued.discard(id(s))
            # After a reset in flight the result belongs to nobody; the stream may
            # already hold new windows, which still need a batch.
            if gen == s._generation and s._pending and s._pending[0] is w:
                s._pending.popleft()
                prob = None
                if result is not None:
                    probs, states = result
                    # A copy: a view would keep the whole batch's states alive.
                    s._state = states[:, i : i + 1, :].copy()
                    prob = float(probs[i, 0])
                    if self._metrics is not None:
                        self._metrics.vad_lag.observe(time.perf_counter() - w.queued_at)
                landed.append((s, w, gen, prob))
            if s._pending:
                self._enqueue(s)
        for s, w, gen, prob in landed:
            if gen != s._generation:
                continue  # reset by an earlier callback of this batch: never reports
            self._report(w, prob, error)
            # The gate's windows waiting behind it, each taken off the queue as it reports,
            # so a window a callback submits meanwhile queues behind them (in order).
            while prob is not None and gen == s._generation and s._pending:
                if not s._pending[0].quiet:
                    break
                q = s._pending.popleft()
                self._report(q, self._pass(q.end_sample)[0], None)

    def _report(self, w: Window, prob: float | None, error: Exception | None) -> None:
        try:
            w.report(prob, error)
        except Exception as exc:  # a session's bug must not strand the others
            assert self._loop is not None
            self._loop.call_exception_handler(
                {"message": "VAD result callback failed", "exception": exc}
            )

    async def close(self) -> None:
        """Stop batching; windows still waiting resolve as dropped, and a batch still
        running ends on its own with its result dropped."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for stream in [*self._ready, *(s for s, _, _ in self._inflight)]:
            for w in stream._pending:
                w.dropped()
        self._ready.clear()
        self._queued.clear()
        self._inflight = []
        if self._thread is not None:
            self._thread.stop()
            self._thread = None
