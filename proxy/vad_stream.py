"""One session's side of the batched Silero VAD (``proxy/vad.py``): its recurrent
state, the 64-sample context Silero v5+ expects in front of each 512-sample window
(see ``OnnxWrapper.__call__`` in ``silero_vad/utils_vad.py``), the samples left over
that do not yet fill a window, and its windows waiting for a batch."""

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
    samples: Float32Array  # WINDOW samples
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

    __slots__ = ("_buf", "_context", "_fed", "_generation", "_pending", "_quiet", "_state")

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
        self._context = np.zeros(CONTEXT, dtype=np.float32)
        self._buf = np.zeros(0, dtype=np.float32)
        self._fed = 0  # samples cut into windows since creation/reset
        self._quiet = 0  # quiet windows cut in a row (see VadRunner's quiet_dbfs)
        while self._pending:
            self._pending.popleft().dropped()

    def _cut(self, samples: npt.NDArray[np.generic]) -> list[tuple[Float32Array, int]]:
        """Buffer ``samples``; return the complete windows with their end samples."""
        if samples.dtype == np.int16:
            chunk = int16_to_float(samples.astype(np.int16, copy=False))
        else:
            chunk = np.asarray(samples, dtype=np.float32).reshape(-1)
        data = np.concatenate((self._buf, chunk)) if self._buf.size else chunk
        n = data.size // WINDOW
        windows = []
        for i in range(n):
            self._fed += WINDOW
            windows.append((np.ascontiguousarray(data[i * WINDOW : (i + 1) * WINDOW]), self._fed))
        self._buf = data[n * WINDOW :].copy()
        return windows

    def _advance(self, state: Float32Array, window: Float32Array) -> None:
        self._state = state
        self._context = window[-CONTEXT:].copy()

    def _cut_quiet(
        self, samples: npt.NDArray[np.generic], floor: float | None
    ) -> list[tuple[Float32Array, int, bool]]:
        """``_cut``'s windows, each with whether the quiet gate answers it: its peak at
        most ``floor`` (None: the gate is off) after ``QUIET_AFTER`` such windows in a row."""
        out = []
        for window, end in self._cut(samples):
            quiet = False
            if floor is not None:
                if float(np.abs(window).max()) > floor:
                    self._quiet = 0
                else:
                    self._quiet += 1
                    quiet = self._quiet > QUIET_AFTER
            out.append((window, end, quiet))
        return out

    def _pass_quiet(self, window: Float32Array) -> None:
        """A gated window: the state is kept as it is, the context moves on."""
        self._context = window[-CONTEXT:].copy()
