"""G.711 (μ-law, A-law) <-> PCM16: the codec of telephony clients' ``audio/pcmu`` / ``audio/pcma``.

The stdlib ``audioop`` does the coding (ITU-T G.711 tables, in C). It is deprecated
from Python 3.11 and gone in 3.13, where the ``audioop-lts`` package (a dependency in
``pyproject.toml`` for those versions) provides the same module; its import warning is
silenced here, the one module that imports it. One byte is one sample at 8 kHz.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop

ULAW = "pcmu"
ALAW = "pcma"
G711_ENCODINGS = (ULAW, ALAW)
G711_RATE_HZ = 8000


def g711_to_int16(raw: bytes, encoding: str) -> npt.NDArray[np.int16]:
    """One byte per sample -> int16 samples."""
    linear = audioop.ulaw2lin(raw, 2) if encoding == ULAW else audioop.alaw2lin(raw, 2)
    # audioop's samples are in native byte order, as numpy reads int16.
    out: npt.NDArray[np.int16] = np.frombuffer(linear, dtype=np.int16)
    return out


def int16_to_g711(samples: npt.NDArray[np.int16], encoding: str) -> bytes:
    """int16 samples -> one byte per sample."""
    native = np.ascontiguousarray(samples, dtype=np.int16).tobytes()
    return audioop.lin2ulaw(native, 2) if encoding == ULAW else audioop.lin2alaw(native, 2)
