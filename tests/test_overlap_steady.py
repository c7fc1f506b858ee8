"""A backchannel still sounding at the decision: one sound held on is waited on, words
are not (``shim/overlap_steady.py``, ``judge`` in ``shim/overlap_decision.py``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from shim.overlap_decision import DecisionParams, Kind, Tally, Verdict, classify, judge
from shim.overlap_evidence import WINDOW, OverlapEvidence, WindowEvidence
from shim.overlap_voicing import centroid, periodicity
from tests.test_overlap_evidence import decide

RATE = 16000
# Formants (Hz) of three vowels: "ee", "ah", "oo".
VOWELS = {"ee": (270, 2300, 3000), "ah": (730, 1090, 2440), "oo": (300, 870, 2240)}


def vowel(name: str, ms: int, f0: tuple[float, float] = (128.0, 138.0)) -> np.ndarray:
    """A voiced vowel at -20 dBFS: harmonics of a pitch gliding from f0[0] to f0[1],
    shaped by the vowel's formants."""
    n = RATE * ms // 1000
    pitch = np.linspace(f0[0], f0[1], n)
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    x = np.zeros(n)
    for k in range(1, 40):
        f = k * float(pitch.mean())
        if f > 7000:
            break
        gain = sum(1.0 / (1.0 + ((f - fm) / 80.0) ** 2) for fm in VOWELS[name])
        x += gain * np.sin(k * phase)
    return (x * 0.1 / np.sqrt(np.mean(x**2))).astype(np.float32)


def measured(x: np.ndarray, prob: float = 0.99) -> list[WindowEvidence]:
    ev = OverlapEvidence()
    out = []
    for end in range(WINDOW, x.size + 1, WINDOW):
        chunk = x[end - WINDOW : end]
        ev.add_scaled(chunk, chunk, end - WINDOW)
        # Speech to Silero while the voice sounds, silence after it.
        out.append(ev.measure(prob if float(np.dot(chunk, chunk)) > 1e-6 else 0.01, end))
    return out


def verdicts(x: np.ndarray, p: DecisionParams) -> list[tuple[int, Verdict]]:
    """(ms from the onset, verdict) after each window, up to the first that is not WAIT."""
    tally = Tally.starting(0)
    out = []
    for w in measured(x):
        tally.add(classify(w, None, p), w, p)
        out.append((w.end_sample * 1000 // RATE, judge(tally, w.end_sample, p)))
        if out[-1][1] is not Verdict.WAIT:
            break
    return out


def silence(ms: int) -> np.ndarray:
    return np.zeros(RATE * ms // 1000, dtype=np.float32)


def test_a_vowels_pitch_and_centroid_are_its_voice_and_where_its_formants_lie() -> None:
    ee, ah = vowel("ee", 100, (130.0, 130.0)), vowel("ah", 100, (130.0, 130.0))
    (v_ee, f_ee), (v_ah, f_ah) = periodicity(ee[:WINDOW]), periodicity(ah[:WINDOW])
    assert v_ee > 0.9 and v_ah > 0.9
    assert abs(f_ee - 130.0) < 4.0 and abs(f_ah - 130.0) < 4.0
    c_ee, c_ah = centroid(ee[:WINDOW]), centroid(ah[:WINDOW])
    assert abs(c_ee - c_ah) > 0.25 * c_ah
    # The same vowel, wherever the window falls on its pitch periods: within 5%.
    shifted = [centroid(ee[i : i + WINDOW]) for i in range(0, 1024, 97)]
    assert max(shifted) - min(shifted) < 0.05 * c_ee
    silent = np.zeros(WINDOW, dtype=np.float32)
    assert periodicity(silent) == (0.0, 0.0) and centroid(silent) == 0.0


def test_a_slow_backchannel_still_sounding_at_the_decision_is_waited_on_then_released() -> None:
    # "I seee": a short first vowel, then one vowel held on past the decision time.
    x = np.concatenate((vowel("ah", 250), silence(60), vowel("ee", 620), silence(1200)))
    p = DecisionParams()
    steps = verdicts(x, p)
    assert Verdict.BARGE_IN not in [v for _, v in steps]
    assert steps[-1][1] is Verdict.RELEASE
    # Without the rule it was a barge-in at the decision time (what GA clients stop on).
    old = verdicts(x, dataclasses.replace(p, drawn_out_windows=0))
    assert old[-1][1] is Verdict.BARGE_IN and old[-1][0] < p.decision_ms + p.grace_ms


def test_words_at_a_flat_pitch_are_a_barge_in_at_the_decision_time() -> None:
    # A monotone voice: the pitch stays, the vowels change every 96-160 ms.
    parts = [vowel(v, ms, (130.0, 130.0)) for v, ms in [("ah", 128), ("ee", 96), ("oo", 160)] * 4]
    p = DecisionParams()
    steps = verdicts(np.concatenate(parts), p)
    assert steps[-1][1] is Verdict.BARGE_IN
    assert steps == verdicts(np.concatenate(parts), dataclasses.replace(p, drawn_out_windows=0))


def test_a_sound_held_on_past_the_decision_is_a_barge_in_at_the_first_word() -> None:
    # "Nooo, ... wait": the held vowel is waited on; the words after it are decided at once.
    x = np.concatenate((vowel("oo", 900), vowel("ah", 96), vowel("ee", 96), vowel("ah", 300)))
    steps = verdicts(x, DecisionParams())
    at, verdict = steps[-1]
    assert verdict is Verdict.BARGE_IN
    assert 900 < at <= 900 + 2 * WINDOW * 1000 // RATE


def test_a_sound_held_on_lasts_through_its_tail_until_two_windows_of_words() -> None:
    tally = Tally.starting(0)
    ws = measured(np.concatenate((vowel("ee", 420), vowel("ah", 200))))
    for w in ws[:12]:
        tally.add(Kind.USER, w)
    assert tally.steady.windows == 12 and tally.steady.drawn_out(9)
    tally.add(Kind.ECHO, ws[12])  # not the user's: no more of the sound, no words yet
    assert tally.steady.windows == 0 and tally.steady.drawn_out(9)
    tally.add(Kind.USER, ws[14])
    assert tally.steady.drawn_out(9)  # one window of something else: maybe its tail
    tally.add(Kind.USER, ws[15])
    assert not tally.steady.drawn_out(9)  # two in a row: words
    assert not tally.steady.drawn_out(0)


@pytest.mark.parametrize("name", ["utt07_clean.wav", "utt03_clean.wav", "utt08_hum5020.wav"])
def test_a_sentence_is_decided_as_before(name: str) -> None:
    """Real sentences (``utt07``: a monotone voice, every sound voiced) with real Silero:
    the same verdict at the same time with and without the rule."""
    assert decide(name, 600) == decide(name, 600, drawn_out_windows=0)
