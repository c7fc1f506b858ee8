"""One session's side of the batched Silero VAD (``proxy/vad.py``): its recurrent
state, the 64-sample context Silero v5+ expects in front of each 512-sample window
(see ``OnnxWrapper.__call__`` in ``silero_vad/utils_vad.py``), the samples left over
that do not yet fill a window, and its windows waiting for a batch.

The context is the previous window's last samples, known as soon as that window is
cut: each window is cut as the row the model reads (context, then window), filled in
place as samples come, so a batch only stacks its rows."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from shim.audio import int16_to_float

RATE_HZ = 16000
WINDOW = 512  # samples per Silero window at 16 kHz (32 ms)
CONTEXT = 64  # samples of the previous window Silero v5+ prepends
STATE_SHAPE = (2, 1, 128)
QUIET_AFTER = 16  # quiet windows (~0.5 s) inferred before the quiet gate answers the next

Float32Array = npt.NDArray[np.float32]
# Where a window submitted with ``VadRunner.submit`` reports: (probability, end sample).
Deliver = Callable[[float, int], None]
Fail = Callable[[Exception], None]


@dataclass(slots=True)
class Window:
    row: Float32Array  # CONTEXT + WINDOW samples: the model's input row
    end_sample: int
    # Its result goes to exactly one of these: a future (``process``; None: dropped by
    # a reset) or a callback (``submit``; a dropped window never reports, a failed
    # inference goes to ``fail``).
    done: asyncio.Future[float | None] | None
    queued_at: float = 0.0  # perf_counter when queued, for the decision-lag metric
    deliver: Deliver | None = None
    fail: Fail | None = None
    # Below the runner's quiet floor after a run of quiet windows: reported as 0 without
    # inference once the windows ahead of it have landed (``VadRunner`` ``quiet_dbfs``).
    quiet: bool = False

    def dropped(self) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def report(self, prob: float | None, error: Exception | None) -> None:
        """Its result (``prob``) or its batch's failure, to its callback or future."""
        if prob is not None:
            if self.deliver is not None:
                self.deliver(prob, self.end_sample)
            elif self.done is not None and not self.done.done():  # done: caller cancelled
                self.done.set_result(prob)
        elif error is not None and self.fail is not None:
            self.fail(error)
        elif error is not None and self.done is not None and not self.done.done():
            self.done.set_exception(error)


class VadStream:
    """One session's Silero state. Create with ``VadRunner.new_stream()``."""

    __slots__ = ("_fed", "_fill", "_generation", "_pending", "_quiet", "_row", "_state")

    def __init__(self) -> None:
        self._generation = 0  # bumped by reset(): results of older windows are dropped
        self._pending: deque[Window] = deque()
        self.reset()

    @property
    def backlog(self) -> int:
        """Windows waiting for (or in) a batch."""
        return len(self._pending)

    @property
    def fed(self) -> int:
        """The end sample of the last window cut (0 after a reset)."""
        return self._fed

    def reset(self) -> None:
        """Forget everything: state, context, leftover samples, the sample count.

        Windows still queued or in flight are dropped: their ``process`` calls
        return without them, and an in-flight result no longer touches the state.
        """
        self._generation += 1
        self._state = np.zeros(STATE_SHAPE, dtype=np.float32)
        # The next row: the context, then the window's first ``_fill`` samples.
        self._row = np.zeros(CONTEXT + WINDOW, dtype=np.float32)
        self._fill = 0
        self._fed = 0  # samples cut into windows since creation/reset
        self._quiet = 0  # quiet windows cut in a row (see VadRunner's quiet_dbfs)
        while self._pending:
            self._pending.popleft().dropped()

    def _cut(
        self, samples: npt.NDArray[np.generic], floor: float | None = None
    ) -> list[tuple[Float32Array, int, bool]]:
        """Buffer ``samples``; return the rows of the windows they complete, each with
        its end sample and whether the quiet gate answers it: its peak at most ``floor``
        (None: the gate is off) after ``QUIET_AFTER`` such windows in a row."""
        if samples.dtype == np.int16:
            chunk = int16_to_float(samples.astype(np.int16, copy=False))
        else:
            chunk = np.asarray(samples, dtype=np.float32).reshape(-1)
        out = []
        row, fill, at, size = self._row, self._fill, 0, chunk.size
        while at < size:
            take = min(WINDOW - fill, size - at)
            row[CONTEXT + fill : CONTEXT + fill + take] = chunk[at : at + take]
            fill += take
            at += take
            if fill < WINDOW:
                break
            self._fed += WINDOW
            quiet = False
            if floor is not None:
                if float(np.abs(row[CONTEXT:]).max()) > floor:
                    self._quiet = 0
                else:
                    self._quiet += 1
                    quiet = self._quiet > QUIET_AFTER
            out.append((row.copy(), self._fed, quiet))
            row[:CONTEXT] = row[WINDOW:]  # the next window's context
            fill = 0
        self._fill = fill
        return out
