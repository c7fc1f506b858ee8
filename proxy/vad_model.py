"""Silero's ONNX model for the batched VAD (``proxy/vad.py``): where the file is, its
onnxruntime session, and one inference call over a batch of rows with its figures.

The model file comes from the ``silero-vad`` wheel, located without importing
``silero_vad`` (that imports torch, which this project never installs).
"""

from __future__ import annotations

import importlib.metadata
import time
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort

from proxy.metrics import Metrics
from proxy.vad_stream import RATE_HZ, Float32Array
from proxy.vad_thread import Result

_SR = np.array(RATE_HZ, dtype=np.int64)


def default_model_path() -> str:
    """The ONNX file in the silero-vad wheel, the one ``load_silero_vad(onnx=True)`` loads."""
    dist = importlib.metadata.distribution("silero-vad")
    return str(dist.locate_file("silero_vad/data/silero_vad.onnx"))


@dataclass(slots=True)
class VadStats:
    windows_total: int = 0
    batches_total: int = 0
    infer_seconds_total: float = 0.0  # wall time inside onnxruntime
    quiet_total: int = 0  # windows the quiet gate answered (``VadRunner`` ``quiet_dbfs``)


class SileroModel:
    """One onnxruntime session of Silero; ``infer`` runs a batch of rows."""

    def __init__(self, model_path: str | None, threads: int, metrics: Metrics | None) -> None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3  # errors only: no warnings on stderr per session
        self._session = ort.InferenceSession(
            model_path or default_model_path(),
            sess_options=opts,
            providers=["CPUExecutionProvider"],
        )
        self.stats = VadStats()
        self._metrics = metrics

    def infer(self, rows: Float32Array, state: Float32Array) -> Result:
        t0 = time.perf_counter()
        prob, new_state = self._session.run(None, {"input": rows, "state": state, "sr": _SR})
        took = time.perf_counter() - t0
        self.stats.infer_seconds_total += took
        if self._metrics is not None:
            self._metrics.vad_inference.observe(took)
            self._metrics.vad_batch_size.observe(rows.shape[0])
        return np.asarray(prob, dtype=np.float32), np.asarray(new_state, dtype=np.float32)
