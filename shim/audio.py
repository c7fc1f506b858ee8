"""Audio helpers: base64 PCM16 <-> numpy, streaming resampling.

Wire audio in the OpenAI Realtime protocol is base64 of little-endian PCM16 mono
(``audio/pcm``), or G.711 μ-law / A-law at 8 kHz (``audio/pcmu`` / ``audio/pcma``,
coded in ``shim/g711.py``); vLLM-Omni presets may also use ``pcm_f32le``. Resampling uses soxr's
streaming resampler so chunk boundaries add no clicks and no drift.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pybase64
import soxr

from shim.g711 import ALAW, G711_ENCODINGS, ULAW, g711_to_int16, int16_to_g711

PCM16 = "pcm16"
PCM_F32 = "pcm_f32le"
PCMU, PCMA = ULAW, ALAW
SUPPORTED_FORMATS = (PCM16, PCM_F32, PCMU, PCMA)

Int16Array = npt.NDArray[np.int16]
Float32Array = npt.NDArray[np.float32]


class AudioError(ValueError):
    """Audio the client or upstream sent cannot be decoded; ``code`` is the wire code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class AudioFormat:
    encoding: str = PCM16
    rate_hz: int = 24000

    @property
    def bytes_per_sample(self) -> int:
        if self.encoding in G711_ENCODINGS:
            return 1
        return 4 if self.encoding == PCM_F32 else 2

    def ms(self, n_bytes: int) -> float:
        return n_bytes / self.bytes_per_sample * 1000.0 / self.rate_hz


def b64decode(data: str) -> bytes:
    """Strict base64 decode; raises AudioError(invalid_audio) on bad input."""
    try:
        return pybase64.b64decode(data, validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise AudioError("invalid_audio", f"audio is not valid base64: {exc}") from None


def b64encode(data: bytes) -> str:
    return pybase64.b64encode(data).decode("ascii")


def decode_samples(raw: bytes, fmt: AudioFormat) -> Int16Array:
    """Raw wire bytes in ``fmt`` -> int16 samples; odd byte counts are an error."""
    if len(raw) % fmt.bytes_per_sample:
        raise AudioError(
            "invalid_audio",
            f"{len(raw)} bytes is not a whole number of {fmt.encoding} samples",
        )
    if fmt.encoding == PCM_F32:
        floats = np.frombuffer(raw, dtype="<f4")
        if not np.all(np.isfinite(floats)):
            raise AudioError("invalid_audio", "pcm_f32le audio holds NaN or infinity")
        return float_to_int16(floats)
    if fmt.encoding in G711_ENCODINGS:
        return g711_to_int16(raw, fmt.encoding)
    out: Int16Array = np.frombuffer(raw, dtype="<i2").astype(np.int16, copy=False)
    return out


def encode_samples(samples: Int16Array, fmt: AudioFormat) -> bytes:
    if fmt.encoding == PCM_F32:
        return int16_to_float(samples).astype("<f4").tobytes()
    if fmt.encoding in G711_ENCODINGS:
        return int16_to_g711(samples, fmt.encoding)
    return samples.astype("<i2", copy=False).tobytes()


def int16_to_float(samples: Int16Array) -> Float32Array:
    return (samples.astype(np.float32) / 32768.0).astype(np.float32, copy=False)


def float_to_int16(samples: Float32Array) -> Int16Array:
    scaled: Float32Array = np.clip(
        np.asarray(samples, dtype=np.float32) * 32768.0, -32768.0, 32767.0
    )
    out: Int16Array = scaled.astype(np.int16)
    return out


class StreamResampler:
    """Chunk-by-chunk int16 resampler that keeps filter state between chunks."""

    __slots__ = ("_stream", "in_rate", "out_rate")

    def __init__(self, in_rate: int, out_rate: int, quality: str = "HQ") -> None:
        self.in_rate = in_rate
        self.out_rate = out_rate
        self._stream = (
            None
            if in_rate == out_rate
            else soxr.ResampleStream(in_rate, out_rate, 1, "int16", quality)
        )

    def process(self, samples: Int16Array, last: bool = False) -> Int16Array:
        if self._stream is None:
            return samples
        out: Int16Array = self._stream.resample_chunk(samples, last=last)
        return out

    def flush(self) -> Int16Array:
        return self.process(np.zeros(0, dtype=np.int16), last=True)
