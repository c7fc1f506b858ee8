"""PersonaPlex's input buffer: 24 kHz float PCM handed to the model in 80 ms units.

``model_executor/models/personaplex/duplex/input.py`` (``PersonaPlexPcmAppendBuffer``)
in vLLM-Omni 0.30.0, and how ``engine/duplex/session/runner.py`` drives it:

* an append must be ``pcm_f32le`` at 24000 Hz, whole 4-byte samples, all finite;
  otherwise the model raises and the runner reports ``bad_event`` with its message
  (journaled). PCM16 reaches it converted to 16 kHz float by the envelope, so it fails
  the rate check;
* the append's samples join the buffer. Only when the session answers by itself
  (``extra_body.auto_response``; the runner's ``allow_emit``) and the buffer holds a
  whole unit (1920 samples) does one unit go to the model: **one per append**, however
  long the append. The rest waits in the buffer for later appends;
* a commit hands over at most one more unit: what the buffer holds up to 1920 samples,
  padded with zeros to a whole unit; anything beyond stays for later;
* clearing the input empties it.

The model's data plane (``runtime_extension.py``) takes exactly 1920 samples per append.
"""

from __future__ import annotations

import numpy as np

RATE_HZ = 24000
UNIT_SAMPLES = 1920  # config.py: FRAME_SIZE, 80 ms at 24 kHz
_BYTES = 4
UNIT_BYTES = UNIT_SAMPLES * _BYTES


class PersonaPlexInputError(ValueError):
    """The model refused an append (its message is what the runner reports)."""


class PersonaPlexFrames:
    """The buffer, and what went through it (for tests of what the model heard)."""

    __slots__ = (
        "_buffer",
        "appended_samples",
        "delivered_samples",
        "longest_append",
        "unit_sizes",
        "units",
    )

    def __init__(self) -> None:
        self._buffer = bytearray()
        #: Samples the buffer accepted from appends.
        self.appended_samples = 0
        #: The longest append it took, in samples (more than a unit leaves the rest waiting).
        self.longest_append = 0
        #: Real (unpadded) samples handed to the model, and how many units carried them.
        self.delivered_samples = 0
        self.units = 0
        #: The sample count of every unit the model got (always ``UNIT_SAMPLES``).
        self.unit_sizes: set[int] = set()

    @property
    def pending_samples(self) -> int:
        return len(self._buffer) // _BYTES

    def append(self, fmt: str, rate_hz: int, raw: bytes, *, allow_emit: bool) -> np.ndarray | None:
        """Buffer one append; the unit the model gets from it, if any (float32)."""
        if fmt != "pcm_f32le":
            raise PersonaPlexInputError("PersonaPlex input format must be pcm_f32le")
        if rate_hz != RATE_HZ:
            raise PersonaPlexInputError("PersonaPlex sample_rate_hz must be 24000")
        if len(raw) % _BYTES:
            raise PersonaPlexInputError(
                "PersonaPlex pcm_f32le byte length must be divisible by four"
            )
        if not np.isfinite(np.frombuffer(raw, dtype="<f4")).all():
            raise PersonaPlexInputError("PersonaPlex pcm_f32le samples must be finite")
        self._buffer += raw
        self.appended_samples += len(raw) // _BYTES
        self.longest_append = max(self.longest_append, len(raw) // _BYTES)
        if not allow_emit or len(self._buffer) < UNIT_BYTES:
            return None
        return self._take(UNIT_BYTES)

    def commit(self) -> np.ndarray | None:
        """The commit's unit: up to one unit of what is buffered, zero-padded."""
        if not self._buffer:
            return None
        return self._take(min(len(self._buffer), UNIT_BYTES))

    def clear(self) -> None:
        self._buffer.clear()

    def _take(self, n_bytes: int) -> np.ndarray:
        raw = bytes(self._buffer[:n_bytes])
        del self._buffer[:n_bytes]
        unit = np.zeros(UNIT_SAMPLES, dtype=np.float32)
        unit[: n_bytes // _BYTES] = np.frombuffer(raw, dtype="<f4")
        self.delivered_samples += n_bytes // _BYTES
        self.units += 1
        self.unit_sizes.add(unit.size)
        return unit
