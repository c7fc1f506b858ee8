"""Decoding ``input_audio_buffer.append`` the way vLLM-Omni's envelope does.

``protocol/realtime/audio_input.py::decode_audio_append``: ``audio`` (or
``delta``) base64; ``format``/``input_audio_format`` and
``sample_rate_hz``/``sample_rate`` fall back to the connection defaults folded
from the session object; PCM16 and G.711 at any integer rate 8-192 kHz are
resampled to 16 kHz float; ``pcm_f32le`` is passed through and must come at
the model's rate (16 kHz, PersonaPlex 24 kHz).  These are translate-time
errors: sent straight to the socket, never journaled.
"""

from __future__ import annotations

import binascii
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pybase64

from proxy.reference.duplex_formats import INPUT_FORMATS, InputDefaults, parse_format
from shim.audio import StreamResampler

Float32Array = npt.NDArray[np.float32]
MIN_RATE_HZ = 8000
MAX_RATE_HZ = 192000
MODEL_RATE_HZ = 16000


class CommandError(Exception):
    """A client event the envelope rejects before it reaches the session (not journaled)."""

    def __init__(self, code: str, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param


@dataclass(frozen=True, slots=True)
class DecodedAppend:
    samples: Float32Array
    duration_ms: float
    #: The client's own ``is_speech`` mark, when it sent one.
    is_speech: bool | None = None
    #: Declared as ``pcm_f32le`` (the format the model reads without conversion).
    native_float: bool = False


def _g711_tables() -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    codes = np.arange(256, dtype=np.int32)
    u = ~codes & 0xFF
    exponent = (u >> 4) & 7
    magnitude = ((((u & 0x0F) << 3) + 0x84) << exponent) - 0x84
    ulaw = np.where(u & 0x80, -magnitude, magnitude)
    a = codes ^ 0x55
    exponent = (a >> 4) & 7
    mantissa = a & 0x0F
    magnitude = np.where(
        exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << np.maximum(exponent - 1, 0)
    )
    alaw = np.where(a & 0x80, magnitude, -magnitude)
    return ulaw.astype(np.int16), alaw.astype(np.int16)


_ULAW, _ALAW = _g711_tables()


def _rate(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CommandError("bad_event", "sample_rate_hz must be a finite integer")
    rate = int(value)
    if rate != value:
        raise CommandError("bad_event", "sample_rate_hz must be an integer")
    if not MIN_RATE_HZ <= rate <= MAX_RATE_HZ:
        raise CommandError(
            "bad_event", f"sample_rate_hz must be between {MIN_RATE_HZ} and {MAX_RATE_HZ}"
        )
    return rate


class AppendDecoder:
    """Per-session decoder: keeps one streaming resampler so chunk edges stay clean."""

    __slots__ = ("_resampler",)

    def __init__(self) -> None:
        self._resampler: StreamResampler | None = None

    def decode(
        self, event: dict[str, object], defaults: InputDefaults, *, f32_rate_hz: int = MODEL_RATE_HZ
    ) -> DecodedAppend:
        audio = event.get("audio") or event.get("delta")
        if not (isinstance(audio, str) and audio):
            if event.get("video_frames"):
                return DecodedAppend(samples=np.zeros(0, dtype=np.float32), duration_ms=0.0)
            raise CommandError(
                "bad_event", "input_audio_buffer.append requires audio and/or video_frames"
            )
        raw_format = event.get("format") or event.get("input_audio_format") or defaults.fmt
        fmt, format_rate = parse_format(raw_format)
        if not (isinstance(fmt, str) and fmt.lower() in INPUT_FORMATS):
            raise CommandError("unsupported_audio_format", f"Unsupported input_audio_format: {fmt}")
        fmt = fmt.lower()
        try:
            # PCM16 and G.711 are decoded leniently (``convert_input_audio_with_rate``:
            # stripped, ``validate=False``), float strictly.
            lenient = fmt != "pcm_f32le"
            raw = pybase64.b64decode(audio.strip() if lenient else audio, validate=not lenient)
        except (binascii.Error, ValueError):
            raise CommandError("bad_audio", "input audio is not valid base64") from None
        if not raw:  # nothing left of it: the runner finds no audio (its modality check)
            raise CommandError(
                "invalid_input_modality",
                "input_audio_buffer.append requires audio and/or video_frames",
            )
        declared = event.get("sample_rate_hz") or event.get("sample_rate") or format_rate
        if declared is not None and not isinstance(declared, int | float):
            # No number: converted without a rate, then read by the runner at 16 kHz
            # (G.711 at 8 kHz) (``engine/duplex/session/runner.py``).
            declared = MIN_RATE_HZ if fmt in {"g711_ulaw", "g711_alaw"} else MODEL_RATE_HZ
        marked = event.get("is_speech")
        is_speech = marked if isinstance(marked, bool) else None
        if fmt == "pcm_f32le":
            rate = int(declared) if isinstance(declared, int | float) else defaults.rate_hz
            if rate != f32_rate_hz:
                raise CommandError(
                    "bad_event", f"pcm_f32le input sample_rate_hz must be {f32_rate_hz}"
                )
            if len(raw) % 4:
                raise CommandError("bad_event", "pcm_f32le audio must be whole 32-bit samples")
            floats = np.frombuffer(raw, dtype="<f4").astype(np.float32)
            if not np.all(np.isfinite(floats)):
                raise CommandError("bad_event", "pcm_f32le audio holds NaN or infinity")
            if rate != MODEL_RATE_HZ:  # the stand-in's detector listens at 16 kHz
                floats = self._to_model_rate(floats, rate)
            return DecodedAppend(
                samples=floats,
                duration_ms=floats.size / 16.0,
                is_speech=is_speech,
                native_float=True,
            )
        if fmt in {"g711_ulaw", "g711_alaw"}:
            table = _ULAW if fmt == "g711_ulaw" else _ALAW
            pcm = table[np.frombuffer(raw, dtype=np.uint8)]
            # At the session's rate unless the append names one, as PCM16
            # (``decode_audio_append``: 8 kHz only for a rate that is no number).
            rate = _rate(declared) if declared is not None else _rate(defaults.rate_hz)
        else:
            if len(raw) % 2:
                # vLLM-Omni's runner (``engine/duplex/session/runner.py``).
                raise CommandError(
                    "bad_audio", "input_audio_buffer.append pcm16 audio could not be decoded"
                )
            pcm = np.frombuffer(raw, dtype="<i2").astype(np.int16)
            rate = _rate(declared) if declared is not None else _rate(defaults.rate_hz)
        if self._resampler is None or self._resampler.in_rate != rate:
            self._resampler = StreamResampler(rate, MODEL_RATE_HZ)
        resampled = self._resampler.process(pcm)
        samples = (resampled.astype(np.float32) / 32768.0).astype(np.float32)
        return DecodedAppend(
            samples=samples, duration_ms=pcm.size * 1000.0 / rate, is_speech=is_speech
        )

    def _to_model_rate(self, floats: Float32Array, rate: int) -> Float32Array:
        pcm = np.clip(floats * 32768.0, -32768, 32767).astype(np.int16)
        if self._resampler is None or self._resampler.in_rate != rate:
            self._resampler = StreamResampler(rate, MODEL_RATE_HZ)
        out: Float32Array = (self._resampler.process(pcm).astype(np.float32) / 32768.0).astype(
            np.float32
        )
        return out


class InputTape:
    """User audio since the last commit (16 kHz int16), addressed in audio-time ms.

    Bounded: only the newest ``max_ms`` are kept, so an endless monologue or a
    client that never commits cannot grow the session without limit.
    """

    __slots__ = ("_chunks", "_max_samples", "_samples", "_start")

    def __init__(self, max_ms: int = 30000) -> None:
        self._chunks: list[npt.NDArray[np.int16]] = []
        self._samples = 0
        self._start = 0  # absolute sample index of the first kept sample
        self._max_samples = max_ms * 16

    @property
    def end_ms(self) -> int:
        return (self._start + self._samples) // 16

    @property
    def held_ms(self) -> int:
        """The audio kept since the last commit or clear."""
        return self._samples // 16

    def append(self, samples: Float32Array) -> None:
        pcm = np.clip(samples * 32768.0, -32768, 32767).astype(np.int16)
        self._chunks.append(pcm)
        self._samples += pcm.size
        while self._samples - self._chunks[0].size >= self._max_samples:
            dropped = self._chunks.pop(0)
            self._samples -= dropped.size
            self._start += dropped.size

    def slice(self, start_ms: int, end_ms: int) -> npt.NDArray[np.int16]:
        if not self._chunks:
            return np.zeros(0, dtype=np.int16)
        data = np.concatenate(self._chunks)
        lo = max(0, start_ms * 16 - self._start)
        hi = max(lo, min(data.size, end_ms * 16 - self._start))
        return data[lo:hi]

    def clear(self) -> None:
        """Forget the audio (after a commit or clear); the audio-time clock keeps running."""
        self._start += self._samples
        self._chunks = []
        self._samples = 0
