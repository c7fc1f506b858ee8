"""A far voice a little quieter than the user, against the user a little quieter than in
their earlier turns: on real audio (dev corpus voices, a loudspeaker and a room made by
``bench/stimuli_far.py``'s recipe) with real Silero probabilities, through the decision
(``shim/overlap_decision.py``). Babble whose voices all talk at once and a television
over a music bed fill the gaps between words; a close voice falls to the room's floor."""

from __future__ import annotations

import math
import shutil
import sys
from typing import Any

import numpy as np
import pytest
import soxr

from shim.overlap_decision import DecisionParams, Verdict
from tests.overlap_measures import RATE, clip16, evidence, measure_clip, overlap, scaled, user_level
from tests.servers import ROOT

# The decision before far voices near the user's level were told by their gaps.
BEFORE = DecisionParams(far_margin_db=math.inf)


def far() -> Any:
    """``bench/stimuli_far.py``."""
    sys.path.insert(0, str(ROOT / "bench"))
    import stimuli_far

    return stimuli_far


def at_loud_level(x: np.ndarray, level: float) -> np.ndarray:
    """``x`` (float, 16 kHz) as int16 whose loud level (as the evidence measures it) is
    ``level`` dBFS."""
    pcm = np.clip(x * 32768, -32768, 32767).astype(np.int16)
    levels = sorted(w.level_db for w in measure_clip(pcm) if w.level_db > -60)
    loud = levels[int(0.8 * (len(levels) - 1))]
    return scaled(pcm, level - loud)


def babble(talkers: int) -> np.ndarray:
    """Dev corpus voices that all begin at once, band-limited, in a room that keeps the
    direct sound (``bench/stimuli_far.py``'s ``near`` babble)."""
    sf = far()
    rng = np.random.default_rng(4)
    names = ["utt00_clean.wav", "utt03_clean.wav", "utt05_clean.wav", "utt07_clean.wav"]
    names += ["utt09_clean.wav", "utt11_clean.wav"]
    voices = [clip16(n).astype(np.float32) / 32768.0 for n in names[:talkers]]
    n = 2 * RATE
    mix = np.zeros(n, dtype=np.float32)
    for v in voices:
        v = v[np.flatnonzero(np.abs(v) > 0.01)[0] :][:n]
        mix[: v.size] += v / (np.sqrt(np.mean(v**2)) + 1e-9)
    up = soxr.resample(mix, RATE, 24000).astype(np.float32)
    up = sf.room(sf.lowpass(sf.highpass(up, 150), 2500), 0.4, 6.0, rng)
    return soxr.resample(up, 24000, RATE).astype(np.float32)


def television() -> np.ndarray:
    """One announcer through a small loudspeaker in such a room, over a chord of tones
    (``bench/stimuli_far.py``'s ``loudspeaker`` television)."""
    sf = far()
    rng = np.random.default_rng(5)
    talk = sf.voiced_only(
        sf.speak(
            "Good evening. Our top story tonight: floods have closed the coast road.",
            "en-us+m3",
            110,
            40,
        )
    )
    x = sf.room(sf.loudspeaker(talk, (250.0, 3500.0), 2.0), 0.3, 8.0, rng)
    t = np.arange(x.size) / 24000
    chord = sum(np.sin(2 * np.pi * 200 * r * t) for r in (1.0, 1.26, 1.5)) / 3
    bed = chord * 10 ** (-12 / 20) / np.sqrt(np.mean(chord**2))  # 12 dB under the voice
    x = x / (np.sqrt(np.mean(x**2)) + 1e-9) + bed.astype(np.float32)
    return soxr.resample(x.astype(np.float32), 24000, RATE).astype(np.float32)


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng makes the stimuli")
@pytest.mark.parametrize("talkers", [4, 6])
def test_babble_that_talks_at_once_7_db_under_the_user_is_background(talkers: int) -> None:
    level = user_level()
    ws = evidence(at_loud_level(babble(talkers), level - 7))
    verdict, _ = overlap(ws, level, DecisionParams())
    assert verdict is Verdict.RELEASE
    assert overlap(ws, level, BEFORE)[0] is Verdict.BARGE_IN  # what it was taken for


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng makes the stimuli")
def test_a_television_over_a_music_bed_7_db_under_the_user_is_background() -> None:
    level = user_level()
    ws = evidence(at_loud_level(television(), level - 7))
    verdict, _ = overlap(ws, level, DecisionParams())
    assert verdict is Verdict.RELEASE
    assert overlap(ws, level, BEFORE)[0] is Verdict.BARGE_IN


@pytest.mark.parametrize(
    "name",
    [
        "utt01_clean.wav",
        "utt01_pink10.wav",
        "utt03_clean.wav",
        "utt05_clean.wav",
        "utt09_white10.wav",
        "utt10_clean.wav",
    ],
)
@pytest.mark.parametrize("below_db", [5.0, 7.0])
def test_the_user_5_to_7_db_quieter_is_still_a_barge_in(name: str, below_db: float) -> None:
    """A close voice falls to the room's floor between its words, even 10 dB over noise."""
    level = user_level()
    ws = evidence(at_loud_level(clip16(name).astype(np.float32) / 32768.0, level - below_db))
    assert overlap(ws, level, DecisionParams())[0] is Verdict.BARGE_IN
