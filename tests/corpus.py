"""Where the labelled speech corpus is (``DUPLEX_PROXY_CORPUS`` names another place), the
mark that skips a test without it, and a clip of it read at 24 kHz or resampled to 16 kHz."""

from __future__ import annotations

import os
import wave
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from shim.audio import Float32Array, Int16Array, StreamResampler, float_to_int16

CORPUS = Path(
    os.environ.get(
        "DUPLEX_PROXY_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"
    )
)
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(), reason=f"no corpus at {CORPUS}"
)


@cache
def load24k(name: str) -> Int16Array:
    with wave.open(str(CORPUS / name)) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)


def to16k(x24: Float32Array | Int16Array) -> Int16Array:
    rs = StreamResampler(24000, 16000)
    pcm = float_to_int16(np.asarray(x24, np.float32) / 32768.0)
    return np.concatenate((rs.process(pcm), rs.flush()))
