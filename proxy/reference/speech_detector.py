"""The stand-in model's ears: a small speech detector in audio time.

A real model-native duplex model (MiniCPM-o, Nemotron) decides for itself when
the user has finished.  The stand-in uses an energy detector with hangover,
made robust to the corpus noise (white, pink, 50 Hz hum up to -26 dBFS) by
three per-frame tests on 20 ms frames at 16 kHz:

* band RMS (250-3500 Hz) above an absolute floor and ``snr`` times the noise
  floor (minimum of the last second: stationary noise raises it, speech pauses
  keep it low);
* spectral flatness in that band below a ceiling (white/pink noise is flat,
  voiced speech is not);
* most of the frame's energy inside the band (mains hum lives below it).

Speech starts after ``min_speech_ms`` of speech frames and stops after
``silence_ms`` without one.  Time is the count of samples fed: no clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

RATE_HZ = 16000
FRAME = 320
FRAME_MS = 20
_FLOOR_FRAMES = 50
_BAND_SHARE = 0.7

_WINDOW = np.hanning(FRAME)
_NORM = float(np.sqrt(np.sum(_WINDOW**2)))
_FREQS = np.fft.rfftfreq(FRAME, 1.0 / RATE_HZ)
_BAND = (_FREQS >= 250.0) & (_FREQS <= 3500.0)


START = "start"
STOP = "stop"


@dataclass(frozen=True, slots=True)
class DetectorUpdate:
    """What one ``feed`` saw: starts/stops in order (ms of audio time) and speech heard."""

    events: tuple[tuple[str, int], ...] = ()
    speech_ms: int = 0


class SpeechDetector:
    __slots__ = (
        "_active",
        "_band_rms",
        "_floor",
        "_frames",
        "_max_flatness",
        "_min_speech_frames",
        "_pending",
        "_run",
        "_silence",
        "_silence_frames",
        "_snr",
        "start_ms",
    )

    def __init__(
        self,
        *,
        band_rms: float,
        snr: float,
        max_flatness: float,
        min_speech_ms: int,
        silence_ms: int,
    ) -> None:
        self._band_rms = band_rms
        self._snr = snr
        self._max_flatness = max_flatness
        self._min_speech_frames = max(1, min_speech_ms // FRAME_MS)
        self._silence_frames = max(1, silence_ms // FRAME_MS)
        self._pending = np.zeros(0, dtype=np.float32)
        self._floor: deque[float] = deque(maxlen=_FLOOR_FRAMES)
        self._frames = 0
        self._run = 0
        self._silence = 0
        self._active = False
        self.start_ms = 0

    @property
    def active(self) -> bool:
        return self._active

    def reset(self) -> None:
        """Forget the current utterance (after a commit or a clear); keep the noise floor."""
        self._run = 0
        self._silence = 0
        self._active = False

    def feed(self, samples: npt.NDArray[np.float32]) -> DetectorUpdate:
        data = np.concatenate([self._pending, samples.astype(np.float32, copy=False)])
        whole = data.size - data.size % FRAME
        self._pending = data[whole:]
        events: list[tuple[str, int]] = []
        speech_frames = 0
        for frame in data[:whole].reshape(-1, FRAME):
            is_speech = self._is_speech(frame)
            self._frames += 1
            if not self._active:
                self._run = self._run + 1 if is_speech else max(0, self._run - 1)
                if self._run >= self._min_speech_frames:
                    self._active = True
                    self._silence = 0
                    self.start_ms = (self._frames - self._run) * FRAME_MS
                    events.append((START, self.start_ms))
                    speech_frames += self._run
                continue
            if is_speech:
                self._silence = 0
                speech_frames += 1
                continue
            self._silence += 1
            if self._silence >= self._silence_frames:
                self._active = False
                self._run = 0
                events.append((STOP, (self._frames - self._silence) * FRAME_MS))
        return DetectorUpdate(events=tuple(events), speech_ms=speech_frames * FRAME_MS)

    def _is_speech(self, frame: npt.NDArray[np.float32]) -> bool:
        spectrum = np.abs(np.fft.rfft(frame * _WINDOW)) ** 2 + 1e-12
        band = spectrum[_BAND]
        band_mean = float(band.mean())
        band_rms = float(np.sqrt(band_mean)) / _NORM
        self._floor.append(band_rms)
        if band_rms < max(self._band_rms, self._snr * min(self._floor)):
            return False
        flatness = float(np.exp(np.mean(np.log(band)))) / band_mean
        if flatness > self._max_flatness:
            return False
        return band_mean / float(spectrum.mean()) >= _BAND_SHARE**2
