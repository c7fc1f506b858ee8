"""Overlap features measured on real audio, for the overlap tests: a dev corpus clip at
16 kHz, every window of a clip through the evidence (``shim/overlap_evidence.py``), with
a fixed speech probability or real Silero's, the user's level learnt from a turn, and the
windows judged as one overlap (``shim/overlap_decision.py``)."""

from __future__ import annotations

import numpy as np
import soxr

from proxy.vad import VadRunner
from shim.overlap_decision import DecisionParams, Judged, Tally, Verdict, judge
from shim.overlap_evidence import WINDOW, OverlapEvidence, WindowEvidence
from shim.overlap_onset import user_run
from tests.servers import load_clip

RATE = 16000


def clip16(name: str) -> np.ndarray:
    pcm = np.frombuffer(load_clip(name), dtype="<i2").astype(np.float32) / 32768.0
    return np.clip(soxr.resample(pcm, 24000, RATE) * 32768.0, -32768, 32767).astype(np.int16)


def measure_clip(x: np.ndarray, prob: float = 0.9) -> list:  # type: ignore[type-arg]
    """Every window of a clip through the evidence, with no echo suppression."""
    ev = OverlapEvidence()
    out = []
    for end in range(WINDOW, x.size + 1, WINDOW):
        chunk = x[end - WINDOW : end]
        ev.add(chunk, chunk.astype(np.float32) / 32768.0, end - WINDOW)
        out.append(ev.measure(prob, end))
    return out


def user_level() -> float:
    """The user's level, learnt from a turn of the user's (as the session learns it)."""
    ev = OverlapEvidence()
    for w in measure_clip(clip16("utt00_clean.wav")):
        if w.level_db > -60:
            ev.learn_user(w)
    level = ev.user_level_db
    assert level is not None
    return level


def scaled(x: np.ndarray, db: float) -> np.ndarray:
    return np.clip(x.astype(np.float32) * 10 ** (db / 20), -32768, 32767).astype(np.int16)


def evidence(x: np.ndarray) -> list[WindowEvidence]:
    """Every speech window of ``x`` (a second of silence after it) as the session measures
    speech over the assistant: real Silero, ``decay_db`` asked for."""
    x = np.concatenate((x, np.zeros(RATE, dtype=np.int16)))
    runner = VadRunner()
    ev = OverlapEvidence()
    out = []
    for prob, end in runner.process_sync(runner.new_stream(), x):
        chunk = x[end - WINDOW : end]
        ev.add(chunk, chunk.astype(np.float32) / 32768.0, end - WINDOW)
        out.append(ev.measure(prob, end, None, prob >= 0.5))
    return out


def overlap(ws: list[WindowEvidence], level: float, p: DecisionParams) -> tuple[Verdict, int]:
    """The windows judged as an overlap that begins where ``user_run`` says (as
    ``shim/turns.py`` holds): (verdict, ms from its onset)."""
    recent: list[Judged] = []
    tally: Tally | None = None
    for w in ws:
        recent.append(Judged(w, level, p))
        run = user_run(recent, False, level, p) if tally is None else 0
        if run:
            tally = Tally.starting(w.end_sample - run * WINDOW)
            for j in recent[-run:]:
                tally.add(j.kind, j.ev, p)
            continue
        if tally is not None:
            tally.add(recent[-1].kind, w, p)
            verdict = judge(tally, w.end_sample, p, level)
            if verdict is not Verdict.WAIT:
                return verdict, (w.end_sample - tally.onset_sample) * 1000 // RATE
    return Verdict.WAIT, 0
