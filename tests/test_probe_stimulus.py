"""The probe's stimulus (``proxy/probe/stimulus.py``): the bundled one is two utterances
at both rates; a speech file is split on 300 ms of quiet and of speech, mixed down and
resampled, and refused when it is not 16-bit or holds no speech.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from proxy.probe.stimulus import StimulusError, load_stimulus, split_utterances


def _write_wav(
    path: Path, samples: np.ndarray, rate: int, channels: int = 1, width: int = 2
) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())


def _tone(ms: int, rate: int) -> np.ndarray:
    t = np.arange(rate * ms // 1000) / rate
    return (0.3 * 32767 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)


def test_bundled_stimulus_is_two_utterances_at_both_rates() -> None:
    stimulus = load_stimulus()
    assert stimulus.utterances == 2
    for utterance in (stimulus.turn, stimulus.overlap):
        assert 1000 <= utterance.duration_ms <= 2500
        assert abs(utterance.pcm16.size * 3 - utterance.pcm24.size * 2) <= 3
    assert not np.array_equal(stimulus.turn.pcm24[:4800], stimulus.overlap.pcm24[:4800])
    with wave.open(stimulus.source) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (24000, 2, 1)


def test_split_needs_300_ms_of_quiet_and_of_speech() -> None:
    rate = 24000
    silence = np.zeros(rate // 2, dtype=np.int16)
    short_gap = np.zeros(rate // 10, dtype=np.int16)
    click = _tone(100, rate)
    audio = np.concatenate(
        [
            silence,
            _tone(500, rate),
            short_gap,
            _tone(500, rate),
            silence,
            click,
            silence,
            _tone(400, rate),
        ]
    )
    parts = split_utterances(audio, rate)
    assert [round(p.size / rate, 2) for p in parts] == [
        1.14,
        0.42,
    ]  # 20 ms padding each side (none past the end)


def test_speech_file_stereo_48k_is_mixed_and_resampled(tmp_path: Path) -> None:
    mono = _tone(800, 48000)
    stereo = np.stack([mono, mono], axis=1).reshape(-1)
    path = tmp_path / "s.wav"
    _write_wav(path, stereo, 48000, channels=2)
    stimulus = load_stimulus(path)
    assert stimulus.utterances == 1 and stimulus.overlap is stimulus.turn
    assert abs(stimulus.turn.duration_ms - 840) <= 40


@pytest.mark.parametrize("width", [1, 3])
def test_speech_file_must_be_16_bit(tmp_path: Path, width: int) -> None:
    path = tmp_path / "s.wav"
    _write_wav(path, np.zeros(1000 * width, dtype=np.uint8), 16000, width=width)
    with pytest.raises(StimulusError, match="16-bit"):
        load_stimulus(path)


def test_silent_speech_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.wav"
    _write_wav(path, np.zeros(24000, dtype=np.int16), 24000)
    with pytest.raises(StimulusError, match="no speech"):
        load_stimulus(path)
