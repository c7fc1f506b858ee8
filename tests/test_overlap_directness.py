"""A quiet voice at the microphone against a television's or a room's voices: how sharply
each falls after its syllables (``shim/overlap_directness.py``), on real audio (dev corpus
clips, a television made by ``bench/stimuli.py``'s recipe) with real Silero
probabilities, and what the decision makes of it (``shim/overlap_decision.py``)."""

from __future__ import annotations

import math
import shutil
import sys

import numpy as np
import pytest
import soxr

from shim.overlap_decision import DecisionParams, Judged, Kind, Verdict, classify, direct
from shim.overlap_directness import BLOCK, SPAN, sharpest_fall_db
from shim.overlap_evidence import WINDOW, OverlapEvidence
from shim.overlap_onset import user_run
from tests.overlap_measures import RATE, clip16, evidence, measure_clip, overlap, scaled, user_level
from tests.servers import ROOT

OFF = DecisionParams(direct_decay_db=math.inf)  # the decision without the measure


def television(level: float) -> np.ndarray:
    """One talker from a loudspeaker across a reverberant room (``bench/stimuli.py``'s
    recipe), its loud level ``level`` dBFS."""
    sys.path.insert(0, str(ROOT / "bench"))
    import stimuli

    rng = np.random.default_rng(3)
    talk = stimuli.speak(
        "And in other news tonight, the council has approved the new bridge over the river.",
        "en-029+f4",
        175,
        50,
    )
    tv = stimuli.reverb(stimuli.lowpass(talk, 5000), 0.8, rng)
    x = np.clip(soxr.resample(tv, 24000, RATE) * 32768, -32768, 32767).astype(np.int16)
    loud = max(w.level_db for w in measure_clip(x))
    return scaled(x, level - loud + 3.0)  # the loud level is ~3 dB under the loudest


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng makes the television")
def test_a_close_voice_falls_sharply_and_a_televisions_does_not() -> None:
    p = DecisionParams()
    level = user_level()
    for name in ("utt03_clean.wav", "utt05_clean.wav", "utt10_clean.wav"):
        voice = [w for w in evidence(scaled(clip16(name), -10)) if w.prob >= 0.5]
        assert np.mean([direct(w, p) for w in voice]) > 0.5, name
    tv = [w for w in evidence(television(level - 8)) if w.prob >= 0.5]
    assert len(tv) > 30
    assert not any(direct(w, p) for w in tv), max(w.decay_db for w in tv)


@pytest.mark.parametrize(
    "name", ["utt02_clean.wav", "utt03_clean.wav", "utt04_clean.wav", "utt11_clean.wav"]
)
def test_a_quiet_close_voice_is_a_barge_in_at_the_decision_time(name: str) -> None:
    """The user, 10 dB quieter than in their earlier turn (turned away, a softer voice):
    by level alone that is a television's, and it was released as background (and
    decided a second later, when a louder word held the answer again). It falls as a
    voice at the microphone does: a barge-in, at the decision time."""
    level = user_level()
    ws = evidence(scaled(clip16(name), -10))
    p = DecisionParams()
    verdict, at = overlap(ws, level, p)
    assert verdict is Verdict.BARGE_IN
    # (utt11 pauses at the decision time and is decided at its next window, 768 ms)
    assert p.decision_ms <= at <= p.decision_ms + p.grace_ms + 2 * 32
    assert overlap(ws, level, OFF)[0] is Verdict.RELEASE  # what level alone made of it


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng makes the television")
@pytest.mark.parametrize("below_db", [6.0, 10.0])
def test_a_television_as_quiet_as_that_voice_is_still_background(below_db: float) -> None:
    level = user_level()
    verdict, _ = overlap(evidence(television(level - below_db)), level, DecisionParams())
    assert verdict is not Verdict.BARGE_IN


def test_after_a_run_was_dismissed_a_quiet_close_voice_begins_an_overlap_again() -> None:
    """Once a run's overlap is released as someone else's, only speech at the user's own
    level begins another (a television's louder words must not hold the answer again and
    again). A voice at the microphone may be quieter: the margin is wider for it."""
    level = user_level()
    p = DecisionParams()
    ws = evidence(scaled(clip16("utt03_clean.wav"), -12))
    kinds = [Judged(w, level, p) for w in ws]
    starts = [i for i in range(2, len(kinds)) if user_run(kinds[:i], True, level, p)]
    off = [i for i in range(2, len(kinds)) if user_run(kinds[:i], True, level, OFF)]
    assert starts, "the quiet voice begins an overlap again"
    assert len(off) < len(starts) / 2


@pytest.mark.parametrize("name", [f"backchannel{i:02d}.wav" for i in range(5)])
def test_a_backchannels_fading_end_is_not_more_of_it(name: str) -> None:
    """A backchannel falls as a close voice does too; its soft fading end (well below the
    user's level, still voiced) must not count as the user speaking on at the decision."""
    level = user_level()
    verdict, _ = overlap(evidence(clip16(name)), level, DecisionParams())
    assert verdict is Verdict.RELEASE


def test_a_close_voices_window_well_below_the_floor_is_a_dip_not_the_user() -> None:
    """Below the window floor (``window_margin_db`` under the user's level) a close voice's
    voiced window is still the user's within ``direct_window_db`` (a softer syllable), and
    further down a dip or a fading tail: not someone else's (no BACKGROUND), and not the
    user speaking on (an "mm-hmm" still voiced 23 dB down at its end was taken for more
    of it, and the backchannel for a barge-in)."""
    p = DecisionParams()
    voiced = [
        w
        for w in evidence(clip16("utt03_clean.wav"))
        if w.prob >= 0.5 and direct(w, p) and w.voicing >= p.min_voicing
    ]
    assert len(voiced) > 10
    for w in voiced:
        floor_at = w.level_db + p.window_margin_db  # the user's level that puts w at the floor
        assert classify(w, floor_at + 2.0, p) is Kind.USER
        assert classify(w, floor_at + 6.0, p) is Kind.SILENCE
        assert classify(w, floor_at + 6.0, OFF) is Kind.BACKGROUND


def test_one_stop_of_a_sound_is_one_fall_not_a_close_voice() -> None:
    """The blocks before one drop all see it within the fall's horizon: 300 ms of a tone
    that stops once, or babble with one 20 ms dropout, is one fall, not a voice's
    syllables (which stop again and again)."""
    rng = np.random.default_rng(1)
    t = np.arange(RATE // 2) / RATE
    tone = np.zeros(RATE // 2, dtype=np.float32)
    tone[: int(0.3 * RATE)] = 0.1 * np.sin(2 * np.pi * 220 * t[: int(0.3 * RATE)])
    assert sharpest_fall_db(tone) < 1.0
    babble = (0.05 * rng.standard_normal(RATE // 2)).astype(np.float32)
    babble[4000:4320] = 0.0
    assert sharpest_fall_db(babble) < 6.0
    twice = tone.copy()
    twice[1600:2400] = 0.0  # the tone stops twice: two falls
    assert sharpest_fall_db(twice) > 20.0


def test_falls_the_microphone_does_not_have_are_the_suppressors() -> None:
    """Echo suppression chops a continuous sound into falls while the assistant's syllables
    play: what the microphone itself does not fall by does not count."""
    rng = np.random.default_rng(2)
    mic = (0.05 * rng.standard_normal(RATE // 2)).astype(np.float32)
    chopped = mic.copy()
    for at in range(800, mic.size, 1600):
        chopped[at : at + 480] *= 0.01  # cut by 40 dB for 30 ms, as over a syllable
    assert sharpest_fall_db(chopped) > 20.0
    assert sharpest_fall_db(chopped, mic) < 6.0


def arrays(obj: object) -> list[np.ndarray]:
    """The numpy arrays an object holds: in its slots, its containers and the variables
    its functions close over."""
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [a for v in obj for a in arrays(v)]
    if isinstance(obj, dict):
        return [a for v in obj.values() for a in arrays(v)]
    if callable(obj) and hasattr(obj, "__closure__"):
        return [a for c in obj.__closure__ or () for a in arrays(c.cell_contents)]
    slots = getattr(type(obj), "__slots__", ())
    return [a for name in slots for a in arrays(getattr(obj, name, None))]


def test_a_window_keeps_block_levels_not_half_a_second_of_samples() -> None:
    """Every speech window while the assistant plays keeps what ``decay_db`` needs: the
    levels of the last half second's 10 ms blocks of both signals (a hundred floats next
    to the window's own 512 samples), not the samples, and measures the same falls from
    them as from the samples, from any start on (real speech; the echo-suppressed audio
    chopped as over the assistant's syllables)."""
    mic = clip16("utt03_clean.wav")[: 3 * RATE]
    m32 = mic.astype(np.float32) / 32768.0
    clean = m32.copy()
    for at in range(800, clean.size, 1600):
        clean[at : at + 480] *= 0.05
    ev = OverlapEvidence()
    checked = 0
    for end in range(WINDOW, mic.size + 1, WINDOW):
        ev.add(mic[end - WINDOW : end], clean[end - WINDOW : end], end - WINDOW)
        w = ev.measure(1.0, end, None, True)
        held = arrays(w)
        assert sum(a.size for a in held) <= WINDOW + 100, [a.size for a in held]
        lo = max(0, end - SPAN)
        for start in (0, lo + 1, lo + BLOCK, lo + 1000, end - 5 * BLOCK, end - BLOCK):
            c, m = clean[lo:end], m32[lo:end]
            pad = SPAN - c.size  # before the stream began: silence
            c = np.concatenate((np.zeros(pad, np.float32), c))
            m = np.concatenate((np.zeros(pad, np.float32), m))
            since = max(0, start - (end - SPAN))
            assert w.decay_since(start) == sharpest_fall_db(c, m, since), (end, start)
            checked += w.decay_since(start) > 0.0
    assert checked > 50  # the falls measured are not all 0


def test_a_loud_sound_before_the_onset_still_sets_the_floor() -> None:
    """Falls are counted from an overlap's onset on, but measured against the whole half
    second: a quiet sound that stops twice after a loud one 40 dB above it falls no
    further than the loud one's floor, from the onset or not (measured on the part after
    the onset alone it would fall 30 dB, twice)."""
    t = np.arange(SPAN) / RATE
    x = (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    x[SPAN // 2 :] *= 0.01  # 40 dB quieter after the onset
    x[5600:6400] = 0.0  # and it stops twice
    x[7200:7680] = 0.0
    assert sharpest_fall_db(x[SPAN // 2 :]) > 20.0  # the quiet part alone
    assert sharpest_fall_db(x) < 1.0
    assert sharpest_fall_db(x, since=SPAN // 2) < 1.0
    x[: SPAN // 2] *= 0.01  # as quiet before the onset: its falls count again
    assert sharpest_fall_db(x, since=SPAN // 2) > 20.0
