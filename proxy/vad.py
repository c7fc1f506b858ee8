"""Silero VAD on onnxruntime, batched across every session of the process.

One ``VadRunner`` per process owns one ONNX session. Each client session owns a
``VadStream`` (``proxy/vad_stream.py``): Silero's recurrent state and context, and
the samples that do not yet fill a window. A window's result comes back either to
an awaiting ``process`` call or, with ``submit``, to a callback as its batch ends
(no task or future per window: what the emulated sessions use). How the windows of
every session are batched, and where a batch runs, is ``proxy/vad_batches.py``.
With ``quiet_dbfs`` (``[vad] quiet_gate_dbfs``), a window whose peak is at most that
level, after ``QUIET_AFTER`` such windows in a row (``proxy/vad_stream.py``), reports
probability 0 without inference; the state stays as the last window inferred left it
(docs/benchmarks.md, "The VAD's quiet gate, and its rows cut in place", measures it).
The model itself (its file, the onnxruntime session) is ``proxy/vad_model.py``.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import numpy.typing as npt

from proxy.vad_batches import VadBatches
from proxy.vad_model import default_model_path
from proxy.vad_stream import RATE_HZ, WINDOW, Deliver, Fail, VadStream, Window

__all__ = ["RATE_HZ", "WINDOW", "VadRunner", "VadStream", "default_model_path"]


class VadRunner(VadBatches):
    """Runs Silero for every stream of the process; see the module docstring."""

    def new_stream(self) -> VadStream:
        return VadStream()

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
