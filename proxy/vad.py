"""Silero VAD on onnxruntime, batched across every session of the process.

One ``VadRunner`` per process owns one ONNX session. Each client session owns a
``VadStream`` (``proxy/vad_stream.py``): Silero's recurrent state and context, and
the samples that do not yet fill a window. A window's result comes back either to
an awaiting ``process`` call or, with ``submit``, to a callback as its batch ends
(no task or future per window: what the emulated sessions use).

Why batch: one window costs far more in per-call overhead than in arithmetic, so
running the windows of many sessions as rows of one call is much cheaper than
one call each (see ``bench/vad_cost.py``). State is sequential, so a batch takes
at most one window per stream; the next window of a stream waits for the next
batch. A submission arms a timer (no task, no polling) and, after ``gather_ms``
(``[vad] gather_ms``: live sessions' windows arrive spread out, so a call as soon as
one is ready would hold one or two), the batch takes whatever is pending; windows that
arrive while a batch runs form the next one.
Inference runs on one long-lived thread (``proxy/vad_thread.py``; onnxruntime releases
the GIL) so the event loop does not block on it, except for batches of at most
``inline_rows`` windows (``[vad] inline_rows``), which run on the loop's thread:
there a small batch costs less than its hand-over to the thread and back.
With ``quiet_dbfs`` (``[vad] quiet_gate_dbfs``), a window whose peak is at most that
level, after ``QUIET_AFTER`` such windows in a row (``proxy/vad_stream.py``), reports
probability 0 without inference; the state stays as the last window inferred left it
(docs/benchmarks.md, "The VAD's quiet gate, and its rows cut in place", measures it).
The model itself (its file, the onnxruntime session) is ``proxy/vad_model.py``.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque

import numpy as np
import numpy.typing as npt

from proxy.metrics import Metrics
from proxy.vad_model import SileroModel, default_model_path
from proxy.vad_stream import RATE_HZ, WINDOW, Deliver, Fail, Float32Array, VadStream, Window
from proxy.vad_thread import InferenceThread, Result

Batch = list[tuple[VadStream, Window, int]]  # each stream's head window, its generation
__all__ = ["RATE_HZ", "WINDOW", "VadRunner", "VadStream", "default_model_path"]


class VadRunner:
    """Runs Silero for every stream of the process; see the module docstring."""

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

    def new_stream(self) -> VadStream:
        return VadStream()

    def _infer(self, rows: Float32Array, state: Float32Array) -> Result:
        return self._model.infer(rows, state)

    def process_sync(
        self, stream: VadStream, samples: npt.NDArray[np.generic]
    ) -> list[tuple[float, int]]:
        """Same results as ``process``, one window per call, on the calling thread.

        For tests and benchmarks; never mix it with ``process`` on a stream that
        has windows in flight.
        """
        out = []
        for row, end, quiet in stream._cut(samples, self.quiet_floor):
            if quiet:
                out.append(self._pass(end))
                continue
            prob, stream._state = self._infer(row[None, :], stream._state)
            self.stats.windows_total += 1
            self.stats.batches_total += 1
            out.append((float(prob[0, 0]), end))
        return out

    async def process(
        self, stream: VadStream, samples: npt.NDArray[np.generic]
    ) -> list[tuple[float, int]]:
        """Feed 16 kHz mono audio (float32 in [-1, 1], or int16) of any length.

        Returns ``(probability, window_end_sample)`` for each 512-sample window it
        completed, in order; the remainder waits for the next call. Windows
        dropped by ``stream.reset()`` are left out.
        """
        if self._closed:
            raise RuntimeError("VadRunner is closed")
        loop = asyncio.get_running_loop()
        mine = []
        for row, end, quiet in stream._cut(samples, self.quiet_floor):
            done = loop.create_future()
            item = Window(row, end, done, time.perf_counter(), quiet=quiet)
            if quiet and not stream._pending:
                done.set_result(self._pass(end)[0])
            else:
                stream._pending.append(item)
            mine.append(item)
        if not mine:
            return []
        if stream._pending:
            self._enqueue(stream)
        out = []
        for item in mine:
            assert item.done is not None
            prob = await item.done
            if prob is not None:
                out.append((prob, item.end_sample))
        return out

    def submit(
        self,
        stream: VadStream,
        samples: npt.NDArray[np.generic],
        deliver: Deliver,
        fail: Fail | None = None,
    ) -> int:
        """Like ``process``, but each window's result goes to ``deliver(prob, end)``
        when its batch ends, in order; windows dropped by a reset never report; a
        failed inference goes to ``fail(error)``. Returns the windows queued: a window
        the quiet gate answers with nothing queued before it reports before this returns."""
        if self._closed:
            raise RuntimeError("VadRunner is closed")
        now, gen = time.perf_counter(), stream._generation
        n = 0
        for row, end, quiet in stream._cut(samples, self.quiet_floor):
            if quiet and not stream._pending:
                deliver(*self._pass(end))
                if stream._generation != gen:
                    return 0  # its callback reset the stream: the rest are dropped
                continue
            stream._pending.append(Window(row, end, None, now, deliver, fail, quiet))
            n += 1
        if n:
            self._enqueue(stream)
        return n

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
