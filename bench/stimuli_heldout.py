"""The wider held-out set (``bench/stimuli.py --variety held-out``): more voices, words,
rooms and noises than the default set, all drawn from the seed.

* ``speech``: interruptions by voices drawn from espeak-ng accents x variants
  (``+f1``..``+f5``, ``+m1``..``+m8``, the klatt voices) at rates 130-230 wpm and pitches
  20-85; some start with a word and a pause ("Wait. ... I need ..."), some hesitate
  ("Uh, ... wait, ..."), some are quiet (5-7 dB below the user's question), some are
  over a fan or a street;
* ``backchannel``: "yeah", "right", "uh-huh", "I see", "sure", "okay", "mm", "yep",
  "got it", "oh really" and laughter-like bursts, at rates that spread their length
  from ~0.2 s to about the decision time (``voice_ms`` says how long each sounds);
* ``echo``: the assistant's own audio played by a phone-like loudspeaker (band-pass,
  overdriven: soft or hard clipping) into a room (sox ``reverb``'s impulse response),
  -10 and -20 dB, 0-250 ms late: ``echo`` entries name the room's impulse response
  (a WAV) and the loudspeaker (``bench/echo_path.py`` plays it);
* ``noise``: a fan, a street, music with drums, keyboard typing at several paces;
* ``tv``: one talker from a loudspeaker across a reverberant room, 10-14 dB below the user;
* ``babble``: 3-6 voices at once, 10-16 dB below the user;
* and ``bench/stimuli_far.py``'s: a television through a small loudspeaker over a music
  bed, babble whose voices all begin at once, slow backchannels (0.64-0.9 s), each with
  a ``style``.

The user's question (``question.wav``, a voice of its own: the reference backends answer
in it) is at -20 dBFS like every interruption that is not a quiet one.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from stimuli_audio import (
    RATE,
    at_level,
    lowpass,
    pad,
    reverb,
    speak,
    speech_spans,
    write_wav,
)
from stimuli_far import make_far

ACCENTS = ["en-us", "en-gb-x-rp", "en-029", "en-gb-x-gbcwmd", "en", "en-gb-scotland"]
VARIANTS = [f"f{i}" for i in range(1, 6)] + [f"m{i}" for i in range(1, 9)]
VARIANTS += ["klatt", "klatt2", "klatt3", "klatt4", "klatt6"]
SENTENCES = [
    "Excuse me, I think you misunderstood the question.",
    "Please repeat the phone number slowly.",
    "Actually I wanted the vegetarian option instead.",
    "Hold on, which platform does it leave from?",
    "That is not right, the meeting was moved to Monday.",
    "Can you skip ahead to the part about refunds?",
    "Let me stop you there, I already know that.",
    "No no, I said the blue one, not the green one.",
]
OPENERS = ["Wait.", "Sorry.", "Hmm, no.", "One thing."]
HESITATIONS = ["Uh,", "Um,", "Er,"]
HESITATED = [
    "wait, that is not what I meant.",
    "hang on, go back a bit.",
    "stop, I need the total.",
]
BACKCHANNELS = ["yeah", "right", "uh-huh", "I see", "sure", "okay", "mm", "yep", "got it"]
BACKCHANNELS += ["oh really", "mm-hmm", "ha ha"]
TV_TEXT = [
    "And in other news tonight, the council has approved the new bridge over the river.",
    "Temperatures will drop overnight with light rain spreading from the west by morning.",
    "The home side pressed forward but the keeper made two remarkable saves before half time.",
]


def voice(rng: np.random.Generator) -> str:
    return f"{rng.choice(ACCENTS)}+{rng.choice(VARIANTS)}"


def say(text: str, rng: np.random.Generator, v: str | None = None) -> tuple[np.ndarray, str]:
    v = v or voice(rng)
    return speak(text, v, int(rng.integers(130, 230)), int(rng.integers(20, 86))), v


def trim(x: np.ndarray, below_db: float = 40.0) -> np.ndarray:
    """Without espeak-ng's leading and trailing silence (so a pause is the one asked for)."""
    hop = RATE // 200
    frames = x[: x.size // hop * hop].reshape(-1, hop)
    level = 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-9)
    on = np.flatnonzero(level > level.max() - below_db)
    return x[on[0] * hop : (on[-1] + 1) * hop] if on.size else x


def voice_ms(x: np.ndarray) -> int:
    spans = speech_spans(x)
    return int(spans[-1][1] - spans[0][0]) if spans else 0


def fan(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Broadband whoosh (pink-ish, low-passed) with a blade hum and its harmonics."""
    n = int(seconds * RATE)
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    spec /= np.sqrt(np.maximum(f, 20.0))
    x = lowpass(np.fft.irfft(spec, n).astype(np.float32), 2500)
    t = np.arange(n) / RATE
    f0 = float(rng.uniform(40, 120))
    hum = sum(np.sin(2 * np.pi * f0 * h * t) / h for h in range(1, 4))
    return (x / (np.std(x) + 1e-9) + 0.3 * hum).astype(np.float32)


def street(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Traffic rumble, cars passing (swells of filtered noise), a distant horn."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    x = lowpass(rng.standard_normal(n).astype(np.float32), 400)
    for _ in range(int(rng.integers(1, 4))):
        c, w = rng.uniform(0, seconds), rng.uniform(0.4, 1.2)
        swell = np.exp(-(((t - c) / w) ** 2))
        x = x + 2 * swell * lowpass(rng.standard_normal(n).astype(np.float32), 1500)
    h0, h1 = sorted(rng.uniform(0, seconds, 2))
    horn = (t > h0) & (t < min(h0 + 0.4, h1 + 0.1))
    x = x + 0.5 * horn * np.sign(np.sin(2 * np.pi * rng.uniform(350, 450) * t))
    return x.astype(np.float32)


def drums_music(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """A bass line and a melody of harmonic notes over kick and hi-hat on a beat."""
    n = int(seconds * RATE)
    out = np.zeros(n, dtype=np.float32)
    beat = int(RATE * 60 / rng.uniform(90, 130))
    for k, pos in enumerate(range(0, n, beat // 2)):
        m = min(beat // 2, n - pos)
        t = np.arange(m) / RATE
        if k % 2 == 0:
            out[pos : pos + m] += (np.sin(2 * np.pi * 60 * t) * np.exp(-t / 0.08)).astype(
                np.float32
            )
        hat = rng.standard_normal(m) * np.exp(-t / 0.01)
        out[pos : pos + m] += 0.2 * np.diff(hat, prepend=0.0).astype(np.float32)
        f0 = 220 * 2 ** (int(rng.choice([0, 2, 4, 5, 7, 9, 12])) / 12)
        note = sum(np.sin(2 * np.pi * f0 * h * t) / h**1.5 for h in range(1, 6))
        out[pos : pos + m] += (0.4 * note * np.minimum(1.0, t / 0.01)).astype(np.float32)
    return out


def typing(rng: np.random.Generator, seconds: float, pace_s: tuple[float, float]) -> np.ndarray:
    """Key presses: a click and a thud 30-60 ms later, irregular spacing."""
    n = int(seconds * RATE)
    out = np.zeros(n, dtype=np.float32)
    pos = int(rng.integers(0, RATE // 10))
    while pos < n - RATE // 10:
        for off, length, tilt in ((0, 0.006, True), (rng.uniform(0.03, 0.06), 0.012, False)):
            m = int(length * RATE)
            b = rng.standard_normal(m) * np.exp(-np.arange(m) / (m / 4))
            b = np.diff(b, prepend=0.0) if tilt else lowpass(b.astype(np.float32), 800)
            at = pos + int(off * RATE)
            out[at : at + m] += (b * rng.uniform(0.4, 1.0)).astype(np.float32)[: n - at]
        pos += int(rng.uniform(*pace_s) * RATE)
    return out


def sox_room(rng: np.random.Generator, path: Path) -> dict[str, Any]:
    """A room's impulse response from sox ``reverb`` (direct sound included), 0.4 s."""
    exe = shutil.which("sox")
    if exe is None:
        raise SystemExit("sox is required (apt-get install sox)")
    room = {
        "reverberance": int(rng.integers(20, 80)),
        "hf_damping": int(rng.integers(20, 80)),
        "room_scale": int(rng.integers(20, 100)),
        "pre_delay_ms": int(rng.integers(0, 20)),
    }
    impulse = np.zeros(int(0.4 * RATE), dtype=np.float32)
    impulse[0] = 0.5
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "i.wav", Path(tmp) / "o.wav"
        write_wav(src, impulse)
        r = room
        # reverb: reverberance, HF damping, room scale, stereo depth, pre-delay, wet gain;
        # -D: no dither (sox dithers its 16-bit output with fresh noise on every run, so
        # the same seed gave a different room each time).
        args = [r["reverberance"], r["hf_damping"], r["room_scale"], 100, r["pre_delay_ms"], 0]
        argv = [exe, "-D", str(src), str(dst), "reverb", *(str(v) for v in args)]
        subprocess.run(argv, check=True, capture_output=True)
        shutil.copy(dst, path)
    return room


def make_heldout(out: Path, seed: int, add: Any) -> None:
    """Adds the wider set's clips through ``add(name, audio, **meta)``."""
    rng = np.random.default_rng(seed)
    user_db = -20.0
    # The user's question (kind ``question``: not a case): the reference backends answer
    # in its voice, so it is not one of the interruptions (a user who interrupts with
    # the very recording the assistant is playing would be its echo).
    ask, v = say("What time does the museum open on Sunday morning?", rng)
    x = pad(at_level(ask, user_db), 300)
    add("question.wav", x, kind="question", speech_ms=speech_spans(x), voice=v, dbfs=user_db)
    question = x
    # Speech: plain (the first is the question, so clean and in one breath), with an
    # opening word and a pause, hesitant, quiet, over a fan or a street.
    styles = ["plain"] * 4 + ["opener", "opener", "hesitant", "hesitant"]
    styles += ["quiet", "quiet", "fan", "street"]
    for i, style in enumerate(styles):
        text = SENTENCES[i % len(SENTENCES)]
        v = voice(rng)
        if style == "opener" or style == "hesitant":
            first = str(rng.choice(OPENERS if style == "opener" else HESITATIONS))
            rest = str(rng.choice(SENTENCES if style == "opener" else HESITATED))
            a, b = (trim(say(t, rng, v)[0]) for t in (first, rest))
            gap = int(rng.integers(150, 400))
            text = f"{first} ... {rest}"
            clean = np.concatenate([a, np.zeros(RATE * gap // 1000, np.float32), b])
        else:
            clean, _ = say(text, rng, v)
        level = user_db - float(rng.uniform(5, 7)) if style == "quiet" else user_db
        x = pad(at_level(clean, level), 300)
        x = pad(x, 0, x.size * 1000 // RATE + 600)
        meta: dict[str, Any] = {"kind": "speech", "speech_ms": speech_spans(x), "text": text}
        meta.update(voice=v, style=style, dbfs=round(level, 1))
        if style in ("fan", "street"):
            bg = (fan if style == "fan" else street)(rng, x.size / RATE)[: x.size]
            x = x + at_level(bg, user_db - 22)
            meta["background"] = f"{style}-42dBFS"
        add(f"speech{i:02d}.wav", x, **meta)
    # Backchannels at rates spreading their length up to about the decision time.
    for i, word in enumerate(BACKCHANNELS):
        v = voice(rng)
        # Lengths spread from ~0.2 s up to about the decision time (600 ms), not past it:
        # a backchannel still sounding when the decision is due is taken for an interruption.
        wpm, pitch = int(rng.integers(110, 260)), int(rng.integers(20, 86))
        level = user_db - float(rng.uniform(0, 4))
        while True:
            clean = speak("ha ha ha" if word == "ha ha" else word, v, wpm, pitch)
            x = pad(at_level(clean, level), 300, 1400)
            if voice_ms(x) <= 640 or wpm > 400:
                break
            wpm += 30
        meta = {"kind": "backchannel", "text": word, "voice": v, "rate_wpm": wpm}
        add(f"backchannel{i:02d}.wav", x, voice_ms=voice_ms(x), **meta)
    # Echo through a phone-like loudspeaker and a room.
    for i in range(8):
        name = f"echo_room{i:02d}.wav"
        room = sox_room(rng, out / name)
        gain_db = (-10, -20)[i % 2]
        delay = int(rng.choice([0, 40, 90, 120, 180, 250]))
        band = [int(rng.integers(200, 500)), int(rng.integers(3000, 7000))]
        drive = float(np.round(rng.uniform(1.0, 6.0), 1))
        clip_kind = "hard" if i % 3 == 2 else "soft"
        echo = {"gain_db": gain_db, "delay_ms": delay, "band_hz": band, "drive": drive}
        echo.update(clipping=clip_kind, room=room)
        add.entry({"file": name, "kind": "echo", "echo": echo})
    # Noise, a television and babble, relative to the user's level.
    noises = [
        ("fan", fan(rng, 3.0), -12),
        ("street", street(rng, 3.0), -10),
        ("drums_music", drums_music(rng, 3.0), -9),
        ("typing_fast", typing(rng, 3.0, (0.08, 0.15)), -10),
        ("typing_slow", typing(rng, 3.0, (0.2, 0.45)), -8),
    ]
    for name, signal, rel in noises:
        level = user_db + rel
        add(f"noise_{name}.wav", at_level(signal, level), kind="noise", noise=name, dbfs=level)
    for i, text in enumerate(TV_TEXT):
        talk, v = say(text, rng)
        level = user_db - float(rng.uniform(10, 14))
        x = at_level(reverb(lowpass(talk, 5000), float(rng.uniform(0.5, 1.0)), rng), level)
        add(f"tv{i:02d}.wav", x, kind="tv", voice=v, dbfs=round(level, 1))
    for i, talkers in enumerate((3, 4, 6)):
        n = 3 * RATE
        mix = np.zeros(n, dtype=np.float32)
        for k in range(talkers):
            s, _ = say(TV_TEXT[k % 3] if k % 2 else SENTENCES[k], rng)
            start = int(rng.integers(0, RATE // 2))
            seg = s[: n - start]
            mix[start : start + seg.size] += at_level(seg, -30)
        level = user_db - float(rng.uniform(10, 16))
        x = at_level(reverb(lowpass(mix, 3000), float(rng.uniform(0.4, 0.8)), rng), level)
        add(f"babble{i:02d}.wav", x, kind="babble", talkers=talkers, dbfs=round(level, 1))
    # A television through a small loudspeaker, babble that starts at once, slow
    # backchannels (``bench/stimuli_far.py``: a random stream of their own, after the rest).
    make_far(seed, voice, add, question)
