"""The cases of the barge-in benchmarks: labelled clips over the assistant's answer.

A corpus directory holds WAV clips (24 kHz PCM16 mono) and a ``manifest.json``
(``kind``: speech, backchannel, noise, babble, tv; ``speech_ms`` spans): the dev
corpus or what ``bench/stimuli.py`` makes. Echo cases
are added to either: the assistant's own audio fed back at -10 and -20 dB,
0/120/250 ms late (a client without echo cancellation). A manifest's own ``echo``
entries (``bench/stimuli.py --variety held-out``) add echo through a loudspeaker and a
room (``bench/echo_path.py``).
"""

from __future__ import annotations

import json
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from echo_path import EchoPath, from_manifest

RATE = 24000
ECHO_DB = (-10, -20)
ECHO_DELAYS_MS = (0, 120, 250)
# Classes a GA client must not hear as interruptions, and the one it must.
FALSE_CLASSES = ("echo", "noise", "backchannel", "babble", "tv")


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == RATE and w.getsampwidth() == 2 and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)


@dataclass
class Case:
    mode: str
    kind: str  # speech | backchannel | noise | babble | tv | echo
    name: str
    clip: np.ndarray | None
    onset_ms: int | None  # first labelled speech in the clip
    echo_gain: float = 0.0
    echo_delay_ms: int = 0
    echo_path: EchoPath | None = None


def manifest(corpus: Path) -> list[dict[str, object]]:
    clips: list[dict[str, object]] = json.loads((corpus / "manifest.json").read_text())["clips"]
    return clips


def prompt_clip(corpus: Path) -> str:
    """The user's question that opens every case: the manifest's ``question`` clip, else
    the corpus's first speech clip said in one breath, with nothing behind it (a pause
    inside the question would let a duplex upstream answer half of it, and the rest
    would talk over the answer)."""
    asked = [c for c in manifest(corpus) if c["kind"] == "question"]
    if asked:
        return str(asked[0]["file"])
    speech = [c for c in manifest(corpus) if c["kind"] == "speech"]
    for clip in speech:
        spans = clip.get("speech_ms") or []
        clean = not any(k in clip for k in ("noise", "background"))
        if clean and isinstance(spans, list) and len(spans) == 1:
            return str(clip["file"])
    if speech:
        return str(speech[0]["file"])
    raise SystemExit(f"{corpus} has no speech clip to ask the question with")


def build_cases(corpus: Path, modes: list[str]) -> list[Case]:
    cases: list[Case] = []
    for mode in modes:
        for clip in manifest(corpus):
            if clip["kind"] == "question":
                continue  # the question every case opens with (``prompt_clip``)
            audio = read_wav(corpus / str(clip["file"]))
            if clip["kind"] == "echo":
                echo: dict[str, object] = clip["echo"]  # type: ignore[assignment]
                gain = 10 ** (float(echo["gain_db"]) / 20)  # type: ignore[arg-type]
                path = from_manifest(echo, audio)
                name = str(clip["file"]).removesuffix(".wav")
                delay = int(echo["delay_ms"])  # type: ignore[call-overload]
                cases.append(Case(mode, "echo", name, None, None, gain, delay, path))
                continue
            spans = clip.get("speech_ms") or []
            onset = int(spans[0][0]) if isinstance(spans, list) and spans else None
            cases.append(Case(mode, str(clip["kind"]), str(clip["file"]), audio, onset))
        for db in ECHO_DB:
            for delay in ECHO_DELAYS_MS:
                name = f"echo{db}dB_{delay}ms"
                cases.append(Case(mode, "echo", name, None, None, 10 ** (db / 20), delay))
    return cases


def interleaved(cases: list[Case]) -> list[Case]:
    """The modes' cases taken in turn (each mode's first, then each one's second, ...): run
    at the same concurrency, every mode then runs beside the others through the whole run,
    under the same load (one mode after another, each met whatever the machine did in its
    own part of the run)."""
    by_mode: dict[str, list[Case]] = {}
    for case in cases:
        by_mode.setdefault(case.mode, []).append(case)
    out: list[Case] = []
    for i in range(max((len(v) for v in by_mode.values()), default=0)):
        out += [v[i] for v in by_mode.values() if i < len(v)]
    return out


_MOST_TALKERS = 6  # the most voices one derived babble mixes


def derived_background(corpus: Path, mode: str, seed: int = 0) -> list[Case]:
    """Babble and TV-like cases made from the corpus's own clean speech, for tuning on
    a corpus that has none (the dev corpus); levels relative to its speech as
    ``bench/stimuli.py`` sets them (babble 10-15 dB, a television 12 dB below the user)."""
    from stimuli_audio import lowpass, reverb

    rng = np.random.default_rng(seed)
    clean = [c for c in manifest(corpus) if c["kind"] == "speech" and "clean" in str(c["file"])]
    if len(clean) < _MOST_TALKERS:
        raise ValueError(
            f"derived babble needs {_MOST_TALKERS} clean speech clips (the dev corpus has"
            f" them), {corpus} has {len(clean)}: a held-out set brings its own babble and TV"
        )
    voices = [read_wav(corpus / str(c["file"])) / 32768.0 for c in clean]
    user = float(np.median([np.sqrt(np.mean(v[v != 0] ** 2)) for v in voices]))
    cases = []
    n = RATE * 3
    for i, (talkers, rel_db) in enumerate([(4, -10), (6, -12), (5, -15)]):
        mix = np.zeros(n, dtype=np.float32)
        for k in rng.choice(len(voices), talkers, replace=False):
            v = voices[k][: n - (start := int(rng.integers(0, RATE // 2)))]
            mix[start : start + v.size] += v
        mix = reverb(lowpass(mix, 3000), 0.6, rng)
        mix *= user * 10 ** (rel_db / 20) / (np.sqrt(np.mean(mix**2)) + 1e-12)
        cases.append(Case(mode, "babble", f"dev_babble{i}", mix * 32768.0, None))
    for i in range(2):
        talk = reverb(lowpass(voices[int(rng.integers(len(voices)))], 5000), 0.8, rng)
        talk *= user * 10 ** (-12 / 20) / (np.sqrt(np.mean(talk**2)) + 1e-12)
        cases.append(Case(mode, "tv", f"dev_tv{i}", talk * 32768.0, None))
    return cases


def echo_chunk(case: Case, speaker: np.ndarray, p0: int, n: int) -> np.ndarray:
    """The answer's echo in the ``n`` microphone samples from ``p0``: what the speaker
    played ``case.echo_delay_ms`` before, at ``case.echo_gain``, through the case's room
    (``case.echo_path``) if it has one; zeros without echo or before it begins."""
    lo = p0 - RATE * case.echo_delay_ms // 1000
    if not case.echo_gain or lo < 0:
        return np.zeros(n, dtype=np.float32)
    if case.echo_path is None:
        return np.asarray(case.echo_gain * speaker[lo : lo + n])
    h = case.echo_path.history  # a loudspeaker in a room: its filters' memory
    head = np.zeros(max(0, h - lo), np.float32)
    dry = np.concatenate([head, speaker[max(0, lo - h) : lo + n]])
    return np.asarray(case.echo_gain * case.echo_path.render(dry, n))
