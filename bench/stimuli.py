"""Held-out turn-taking stimuli, made here: voices, noises and backgrounds the dev corpus lacks.

The dev corpus (`../shared/corpus/dev`) is for tuning. Figures are reported on clips this
script makes, from sources anyone can regenerate: espeak-ng voices at other accents,
rates and pitches than the dev corpus uses, and numpy signals. Classes:

* ``speech``       — real interruptions (held-out voices), some over a quiet background;
* ``backchannel``  — "uh-huh", "okay", "right", "mm-hmm", "yeah", "I see", "sure";
* ``babble``       — several distant voices at once (low-passed, reverberant, low level);
* ``tv``           — one talker from a loudspeaker across the room (reverb, low level);
* ``noise``        — speech-shaped noise, music-like tones, keyboard-like clicks.

Output: WAV files (24 kHz PCM16 mono) and a ``manifest.json`` in the dev corpus's
format (``kind``, ``speech_ms`` spans for speech, ``duration_ms``), so
`bench/bargein.py --corpus DIR` reads either.

    uv run python bench/stimuli.py --out /tmp/heldout [--seed 7]
    uv run python bench/stimuli.py --out /tmp/wide --seed 47 --variety held-out
    uv run python bench/stimuli.py --out /tmp/home --seed 3 --variety household

``--variety held-out`` makes the wider set of ``bench/stimuli_heldout.py`` instead: more
voices, backchannel words and lengths, echo through a loudspeaker and a room, more noises.
``--variety household`` makes ``bench/stimuli_household.py``'s: a question and ten sounds
of a home (a siren, a phone, chords, a dog, a baby, knocks, claps, dishes, a cough, a
vacuum cleaner), each at two levels, for checking that none is taken for the user.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from stimuli_audio import (
    RATE,
    at_level,
    lowpass,
    pad,
    reverb,
    rms,
    speak,
    speech_spans,
    write_wav,
)

__all__ = [
    "RATE",
    "at_level",
    "babble",
    "lowpass",
    "make",
    "pad",
    "reverb",
    "rms",
    "speak",
    "speech_spans",
    "write_wav",
]
# Voices the dev corpus does not use (it has en-us, en-gb+f3, en-us+m3, en-029+f2).
VOICES = ["en-gb-scotland+m2", "en-gb-x-rp+f4", "en-us-nyc+m5", "en-gb-x-gbclan+f1"]
SENTENCES = [
    "Hang on, can you go back to the first point?",
    "No, that is the wrong address, it is number twelve.",
    "Could you make the summary shorter please?",
    "Stop for a second, I have a question about the price.",
    "What about flights on Thursday evening instead?",
    "Sorry, I did not catch the last part of that.",
]
BACKCHANNELS = ["uh-huh", "okay", "right", "mm-hmm", "yeah", "I see", "sure"]
BABBLE_TEXT = [
    "We should meet at the station before the train leaves at nine.",
    "The report is almost done but the figures still need checking.",
    "Did you see the game last night, it went to extra time.",
    "I will bring the salad if you can get the bread and cheese.",
    "The weather turned cold so we stayed in and watched a film.",
]


def babble(rng: np.random.Generator, talkers: int, seconds: float) -> np.ndarray:
    n = int(seconds * RATE)
    mix = np.zeros(n, dtype=np.float32)
    for k in range(talkers):
        voice = VOICES[k % len(VOICES)]
        text = BABBLE_TEXT[k % len(BABBLE_TEXT)]
        s = speak(text, voice, int(rng.integers(140, 190)), int(rng.integers(30, 70)))
        start = int(rng.integers(0, RATE // 2))
        seg = s[: n - start]
        mix[start : start + seg.size] += at_level(seg, -30)
    return reverb(lowpass(mix, 3000), 0.6, rng)


def speech_shaped_noise(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Noise with the long-term spectrum of speech (from a held-out talker)."""
    ref = speak(" ".join(SENTENCES[:3]), VOICES[0], 170, 50)
    n = int(seconds * RATE)
    shape = np.abs(np.fft.rfft(ref, n))
    phase = np.exp(2j * np.pi * rng.random(shape.size))
    return np.fft.irfft(shape * phase, n).astype(np.float32)


def music(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Chords of harmonic tones changing every 250-500 ms, with note envelopes."""
    out = np.zeros(int(seconds * RATE), dtype=np.float32)
    pos = 0
    while pos < out.size:
        dur = int(rng.uniform(0.25, 0.5) * RATE)
        t = np.arange(dur) / RATE
        note = np.zeros(dur)
        for semis in rng.choice([0, 3, 4, 7, 10, 12], size=3, replace=False):
            f0 = 220 * 2 ** ((int(rng.integers(0, 12)) + semis) / 12)
            for h in range(1, 5):
                note += np.sin(2 * np.pi * f0 * h * t) / h
        env = np.minimum(1.0, t / 0.02) * np.exp(-3 * t)
        seg = (note * env)[: out.size - pos]
        out[pos : pos + seg.size] += seg.astype(np.float32)
        pos += dur
    return out


def clicks(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Keyboard-like clicks: 5-15 ms band-limited bursts every 80-250 ms."""
    out = np.zeros(int(seconds * RATE), dtype=np.float32)
    pos = int(rng.integers(0, RATE // 10))
    while pos < out.size:
        n = int(rng.uniform(0.005, 0.015) * RATE)
        burst = rng.standard_normal(n) * np.exp(-np.arange(n) / (n / 4))
        burst = np.diff(burst, prepend=0.0)  # tilt towards the highs, like a key's click
        seg = burst[: out.size - pos].astype(np.float32) * float(rng.uniform(0.5, 1.0))
        out[pos : pos + seg.size] += seg
        pos += int(rng.uniform(0.08, 0.25) * RATE)
    return out


class Clips:
    """The clips written so far, as the manifest lists them."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.clips: list[dict[str, Any]] = []

    def __call__(self, name: str, x: np.ndarray, **meta: Any) -> None:
        write_wav(self.out / name, x)
        self.clips.append({"file": name, "duration_ms": x.size * 1000 // RATE, **meta})

    def entry(self, entry: dict[str, Any]) -> None:
        self.clips.append(entry)


def make(out: Path, seed: int, variety: str = "default") -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    add = Clips(out)
    clips = add.clips
    if variety == "held-out":
        from stimuli_heldout import make_heldout

        make_heldout(out, seed, add)
        return write_manifest(out, clips, f"bench/stimuli.py --seed {seed} --variety held-out")
    if variety == "household":
        from stimuli_household import make_household

        make_household(seed, add)
        return write_manifest(out, clips, f"bench/stimuli.py --seed {seed} --variety household")

    for i, text in enumerate(SENTENCES):
        voice = VOICES[i % len(VOICES)]
        rate_wpm, pitch = int(rng.integers(140, 200)), int(rng.integers(25, 75))
        clean = at_level(speak(text, voice, rate_wpm, pitch), -20)
        x = pad(clean, 300, clean.size * 1000 // RATE + 600)
        spans = speech_spans(x)
        meta = {"kind": "speech", "speech_ms": spans, "text": text, "voice": voice}
        if i % 2:
            # Over a quiet room background: the user is still much louder than the room.
            room = at_level(babble(rng, 3, x.size / RATE), -45)
            # (x.size / RATE back to samples can come out one short: the room's last sample
            # then stays silent; every set that was made before keeps its exact samples.)
            x = x + np.pad(room, (0, max(0, x.size - room.size)))[: x.size]
            meta["background"] = "babble-45dBFS"
        add(f"speech{i:02d}.wav", x, **meta)
    for i, word in enumerate(BACKCHANNELS):
        voice = VOICES[i % len(VOICES)]
        x = pad(at_level(speak(word, voice, int(rng.integers(150, 200)), 50), -22), 300, 1200)
        add(f"backchannel{i:02d}.wav", x, kind="backchannel", text=word, voice=voice)
    for i, (talkers, level) in enumerate([(4, -32), (6, -30), (5, -35)]):
        x = at_level(babble(rng, talkers, 3.0), level)
        add(f"babble{i:02d}.wav", x, kind="babble", talkers=talkers, dbfs=level)
    for i, voice in enumerate(VOICES[:2]):
        talk = speak(BABBLE_TEXT[i], voice, 175, 50)
        x = at_level(reverb(lowpass(talk, 5000), 0.8, rng), -32)
        add(f"tv{i:02d}.wav", x, kind="tv", voice=voice, dbfs=-32)
    for name, signal, level in [
        ("speechshaped", speech_shaped_noise(rng, 3.0), -30),
        ("music", music(rng, 3.0), -28),
        ("clicks", clicks(rng, 3.0), -30),
    ]:
        add(f"noise_{name}.wav", at_level(signal, level), kind="noise", noise=name, dbfs=level)
    return write_manifest(out, clips, f"bench/stimuli.py --seed {seed}")


def write_manifest(out: Path, clips: list[dict[str, Any]], made_with: str) -> dict[str, Any]:
    manifest = {
        "rate_hz": RATE,
        "format": "pcm16 mono wav",
        "split": "heldout",
        "made_with": made_with,
        "clips": clips,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--variety", choices=["default", "held-out", "household"], default="default"
    )
    args = parser.parse_args()
    manifest = make(args.out, args.seed, args.variety)
    kinds: dict[str, int] = {}
    for clip in manifest["clips"]:
        kinds[clip["kind"]] = kinds.get(clip["kind"], 0) + 1
    print(json.dumps({"out": str(args.out), "clips": kinds}))


if __name__ == "__main__":
    main()
