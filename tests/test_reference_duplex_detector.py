"""The duplex stand-in model's ears (``proxy/reference/speech_detector.py``): it hears
vowels, not noise, and one turn in each speech clip of the dev corpus, none in its noise.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from proxy.reference.speech_detector import START, SpeechDetector
from tests.testaudio import noise, silence, vowel

pytestmark = pytest.mark.timeout(60)


def test_detector_hears_vowels_not_noise() -> None:
    detector = SpeechDetector(
        band_rms=0.006, snr=3.0, max_flatness=0.25, min_speech_ms=100, silence_ms=500
    )
    update = detector.feed(noise(2000, level=0.05).astype(np.float32) / 32768.0)
    assert update.events == ()
    update = detector.feed(np.concatenate([vowel(600), silence(700)]).astype(np.float32) / 32768.0)
    assert [kind for kind, _ in update.events] == [START, "stop"]


CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"


@pytest.mark.skipif(not (CORPUS / "manifest.json").exists(), reason="speech corpus not present")
def test_detector_on_the_dev_corpus() -> None:
    import wave

    from shim.audio import StreamResampler

    manifest = json.loads((CORPUS / "manifest.json").read_text())
    for clip in manifest["clips"]:
        with wave.open(str(CORPUS / clip["file"])) as handle:
            samples = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2").astype(
                np.int16
            )
        resampler = StreamResampler(manifest["rate_hz"], 16000)
        audio = np.concatenate([resampler.process(samples), resampler.flush(), silence(1000)])
        detector = SpeechDetector(
            band_rms=0.006, snr=3.0, max_flatness=0.25, min_speech_ms=100, silence_ms=500
        )
        starts = [
            ms
            for kind, ms in detector.feed(audio.astype(np.float32) / 32768.0).events
            if kind == START
        ]
        expected = 0 if clip["kind"] == "noise" else 1
        assert len(starts) == expected, clip["file"]
