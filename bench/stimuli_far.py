"""Far voices and slow backchannels for the wider held-out set (``--variety held-out``).

The set's first television and babble are long-reverberant and staggered, and its
backchannels end by the decision time; these clips are what those miss, each with a
``style`` in the manifest (the kind stays ``tv``, ``babble`` or ``backchannel``):

* ``tv``, style ``loudspeaker``: one slow announcer through a small loudspeaker
  (band-pass, soft clipping) a few metres away, in a room that keeps the direct sound
  (6-10 dB above its reverberation; the set's other rooms are reverberation alone), over
  a steady music bed (a chord of tones), 10-12 dB below the user, talking all through;
* ``babble``, style ``near``: 4 or 6 voices that all begin at once (within 0.1 s),
  band-limited (150-2500 Hz), in such a room, 8-10 dB below the user;
* ``backchannel``, style ``slow``: "okay", "right", "mm-hmm", "I see" said slowly,
  0.64-0.9 s long: still sounding when a decision at 600 ms is due.

Levels are those of the loudest second of a clip against the user's sounding level (the
question's samples within 40 dB of its peak): how loud a far voice is, against the
user's speech as the proxy learns its level, while the overlap is decided. The set's
other levels are RMS over whole clips, pauses included, which puts a far voice a few
dB further under the user than its nominal figure. The clips come from their own random
stream (the seed and 12), after all the others: every clip the set had before is the
same, byte for byte.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stimuli_audio import RATE, lowpass, pad, reverb, speak

ANNOUNCEMENTS = [
    "Good evening. Our top story tonight: floods have closed the coast road, and the"
    " ferry service is suspended until further notice.",
    "Coming up after the break, a look at the weekend's fixtures and the manager who"
    " says his team is ready for the final.",
]
CROWD = [
    "The committee will meet again next quarter to go over the figures.",
    "I told him the parcel would come some time before the weekend.",
    "Prices in the energy sector rose sharply all through the afternoon.",
    "We could try that new noodle place on the corner if you like.",
    "They say the fog will stay along the valley until late tomorrow.",
    "My sister moved to the north of the country in the spring.",
]
SLOW_WORDS = ["okay", "right", "mm-hmm", "I see"]


def _sounding(x: np.ndarray) -> np.ndarray:
    """The samples of ``x`` within 40 dB of its peak."""
    return x[np.abs(x) > float(np.abs(x).max()) * 0.01].astype(np.float64)


def sounding_level(x: np.ndarray, dbfs: float) -> np.ndarray:
    """``x`` scaled so that its sounding part (within 40 dB of the peak) is at ``dbfs``."""
    loud = _sounding(x)
    r = float(np.sqrt(np.mean(np.square(loud, dtype=np.float64)))) + 1e-12
    return (x * (10 ** (dbfs / 20) / r)).astype(np.float32)


def loudest_second(x: np.ndarray, dbfs: float) -> np.ndarray:
    """``x`` scaled so that its loudest second (RMS over 1 s, in 100 ms steps) is at
    ``dbfs``: how loud a far voice is while the user's overlap is decided (a babble whose
    voices all talk at first and end one by one is quieter on average than then)."""
    hop = RATE // 10
    e = np.cumsum(np.concatenate(([0.0], np.square(x, dtype=np.float64))))
    r = max(float(e[i + RATE] - e[i]) for i in range(0, max(1, x.size - RATE + 1), hop))
    r = np.sqrt(r / min(RATE, x.size)) + 1e-12
    return (x * (10 ** (dbfs / 20) / r)).astype(np.float32)


def highpass(x: np.ndarray, cutoff_hz: float) -> np.ndarray:
    spec = np.fft.rfft(x)
    spec[np.fft.rfftfreq(x.size, 1 / RATE) < cutoff_hz] *= 0.05
    return np.fft.irfft(spec, x.size).astype(np.float32)


def loudspeaker(x: np.ndarray, band: tuple[float, float], drive: float) -> np.ndarray:
    """A small loudspeaker: band-pass and soft clipping (``drive`` x gain into tanh)."""
    y = lowpass(highpass(x, band[0]), band[1])
    y = y / (float(np.abs(y).max()) + 1e-9)
    return (np.tanh(drive * y) / np.tanh(drive)).astype(np.float32)


def room(x: np.ndarray, rt60_s: float, drr_db: float, rng: np.random.Generator) -> np.ndarray:
    """A room that keeps the direct sound: ``x`` plus its reverberation (``reverb``, all
    tail) ``drr_db`` below it. A loudspeaker a few metres away is heard mostly direct; the
    set's other rooms are reverberation alone."""
    wet = reverb(x, rt60_s, rng)
    gain = float(np.sqrt(np.sum(np.square(x, dtype=np.float64)) / (np.sum(wet**2) + 1e-12)))
    return (x + wet * gain * 10 ** (-drr_db / 20)).astype(np.float32)


def voiced_only(x: np.ndarray) -> np.ndarray:
    """Without espeak-ng's leading and trailing silence."""
    on = np.flatnonzero(np.abs(x) > float(np.abs(x).max()) * 0.01)
    return x[on[0] : on[-1] + 1] if on.size else x


def make_far(seed: int, voice: Any, add: Any, question: np.ndarray) -> None:
    """Adds the clips through ``add(name, audio, **meta)``; ``voice(rng)`` draws a voice.
    Levels are relative to the user's: the sounding level of ``question`` (what the proxy
    learns the user's level from is the user's speech, not the pauses in it)."""
    user_db = float(20 * np.log10(np.sqrt(np.mean(np.square(_sounding(question)))) + 1e-12))
    rng = np.random.default_rng([seed, 12])
    seconds = 4.0
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    for i, text in enumerate(ANNOUNCEMENTS):
        v = voice(rng)
        wpm, pitch = int(rng.integers(95, 130)), int(rng.integers(20, 60))
        talk = voiced_only(speak(text, v, wpm, pitch))[:n]
        band = (float(rng.uniform(200, 300)), float(rng.uniform(3000, 4000)))
        drive = float(np.round(rng.uniform(1.5, 3.0), 1))
        rt60 = float(np.round(rng.uniform(0.2, 0.4), 2))
        drr = float(np.round(rng.uniform(6, 10), 1))
        speech = room(loudspeaker(talk, band, drive), rt60, drr, rng)
        speech = sounding_level(np.pad(speech, (0, n - speech.size)), -20.0)
        root = float(rng.uniform(150, 250))
        chord = sum(np.sin(2 * np.pi * root * r * t) for r in (1.0, 1.26, 1.5)) / 3
        bed_db = -20.0 - float(rng.uniform(10, 14))
        x = speech + sounding_level(chord.astype(np.float32), bed_db)
        level = user_db - float(rng.uniform(10, 12))
        meta = {"kind": "tv", "style": "loudspeaker", "voice": v, "rate_wpm": wpm}
        meta.update(band_hz=[round(b) for b in band], drive=drive, rt60_s=rt60, drr_db=drr)
        add(f"tv_speaker{i:02d}.wav", loudest_second(x, level), dbfs=round(level, 1), **meta)
    for i, talkers in enumerate((4, 6)):
        mix = np.zeros(n, dtype=np.float32)
        for k in range(talkers):
            wpm, pitch = int(rng.integers(120, 220)), int(rng.integers(20, 86))
            s = voiced_only(speak(CROWD[k % len(CROWD)], voice(rng), wpm, pitch))
            start = int(rng.integers(0, RATE // 10))
            seg = sounding_level(s, -20.0)[: n - start]
            mix[start : start + seg.size] += seg
        rt60, drr = float(rng.uniform(0.3, 0.6)), float(rng.uniform(4, 8))
        mix = room(lowpass(highpass(mix, 150), 2500), rt60, drr, rng)
        level = user_db - float(rng.uniform(8, 10))
        meta = {"kind": "babble", "style": "near", "talkers": talkers}
        add(f"babble_near{i:02d}.wav", loudest_second(mix, level), dbfs=round(level, 1), **meta)
    for i, word in enumerate(SLOW_WORDS):
        v = voice(rng)
        pitch = int(rng.integers(20, 86))
        level = user_db - float(rng.uniform(0, 3))
        for wpm in range(130, 40, -10):  # slower until it lasts 0.64 s or more
            clean = voiced_only(speak(word, v, wpm, pitch))
            if clean.size >= 0.64 * RATE:
                break
        clean = clean[: int(0.9 * RATE)]
        x = pad(sounding_level(clean, level), 300, 2000)
        meta = {"kind": "backchannel", "style": "slow", "text": word, "voice": v}
        add(f"backchannel_slow{i:02d}.wav", x, voice_ms=clean.size * 1000 // RATE, **meta)
