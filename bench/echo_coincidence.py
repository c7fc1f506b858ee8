"""Echo locks where there is no echo: how often the echo suppressor's delay search finds
the answer in a microphone that never heard it, and how long such a lock is kept.

    uv run python bench/echo_coincidence.py --json                   # 1 200 pairs
    uv run python bench/echo_coincidence.py --root OTHER_CHECKOUT    # that code's shim

Each case, drawn from a seed: the answer is one dev-corpus speech clip (resampled to
16 kHz as the proxy does), placed 0-0.5 s into the microphone's timeline; the
microphone is digital silence until another clip starts 0.8-2.5 s into the answer,
as a barge-in would; no echo at all. The suppressor is fed 20 ms at a time. Every lock
is a coincidence: reported are how many cases locked, how long the locks were kept in
all, the longest, and the gains and couplings they claimed (a coupling far above 1
has the residual suppressor take the user's words for echo). Audio time, no sockets.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import wave
from pathlib import Path

import numpy as np
import soxr

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
DEV = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"
ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("DUPLEX_PROXY_CORPUS", DEV)))
ap.add_argument("--cases", type=int, default=1200)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--root", type=Path, default=None, help="another checkout's shim")
ap.add_argument("--json", action="store_true")
ARGS = ap.parse_args()
sys.path.insert(0, str((ARGS.root or Path(__file__).resolve().parents[1]).resolve()))

from shim.echo import EchoSuppressor  # noqa: E402

RATE, CHUNK = 16000, 320


def load(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768
    return np.asarray(soxr.resample(x, 24000, RATE)).clip(-1.0, 1.0)


def run_case(far: np.ndarray, user: np.ndarray, lead: int, at: int) -> dict[str, float] | None:
    es = EchoSuppressor()
    es.add_far((far * 32767).astype(np.int16), lead)
    mic = np.zeros(lead + far.size + RATE // 2, np.float32)
    part = user[: mic.size - lead - at]
    mic[lead + at : lead + at + part.size] = part
    pcm = (mic * 32767).astype(np.int16)
    locked, longest, run, claims = 0, 0, 0, []
    for i in range(0, pcm.size - CHUNK + 1, CHUNK):
        es.process(pcm[i : i + CHUNK], i)
        if es.delay is None:
            run = 0
            continue
        locked, run = locked + CHUNK, run + CHUNK
        longest = max(longest, run)
        claims.append((abs(es.gain), es.coupling))
    if not locked:
        return None
    return {
        "locked_ms": locked * 1000 // RATE,
        "longest_ms": longest * 1000 // RATE,
        "max_gain": round(max(g for g, _ in claims), 2),
        "max_coupling": round(max(c for _, c in claims), 2),
    }


def main() -> int:
    dev = ARGS.corpus
    clips = json.loads((dev / "manifest.json").read_text())["clips"]
    speech = {c["file"]: load(dev / c["file"]) for c in clips if c["kind"] == "speech"}
    names = sorted(speech)
    rng = np.random.default_rng(ARGS.seed)
    locks: list[dict[str, object]] = []
    for _ in range(ARGS.cases):
        a, b = rng.choice(names, 2, replace=False)
        at, lead = int(rng.uniform(0.8, 2.5) * RATE), int(rng.uniform(0.0, 0.5) * RATE)
        got = run_case(speech[a], speech[b], lead, at)
        if got is not None:
            locks.append({"answer": str(a), "user": str(b), **got})
    longest = [int(k["longest_ms"]) for k in locks]
    summary = {
        "cases": ARGS.cases,
        "locked_cases": len(locks),
        "locked_ms_total": sum(int(k["locked_ms"]) for k in locks),
        "longest_ms": max(longest, default=0),
        "kept_over_100ms": sum(ms > 100 for ms in longest),
        "coupling_over_2": sum(float(k["max_coupling"]) > 2 for k in locks),
        "locks": locks,
    }
    if ARGS.json:
        print(json.dumps(summary, indent=1))
    else:
        for k in locks:
            print(k)
        print({k: v for k, v in summary.items() if k != "locks"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
