"""The resume bench's checks on what clients heard: answer audio across a move, and
answers spoken over (``bench/resume.py``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from resume_records import Answer, Outcome

# ---------------------------------------------------------------------- audio at the seam

RATE = 24000
LAG = RATE * 200 // 1000  # how far an answer may start from the reference's
WIN = RATE * 150 // 1000  # the audio each side of a seam that is aligned
QUIET = 200  # rms below which a window cannot be aligned
MATCH = 0.9  # normalized correlation that counts as the same audio
EDGE = RATE * 20 // 1000  # each answer's ends (the backend fades 8 ms in and out)


def _pcm(b: bytes | bytearray) -> np.ndarray[Any, Any]:
    return np.frombuffer(bytes(b), dtype=np.int16).astype(np.float64)


def _lag(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], start: int) -> int | None:
    """Where ``x[start:start+WIN]`` lies in ``y``, as an offset: best normalized match."""
    seg = x[start : start + WIN]
    if start < 0 or seg.size < WIN // 2 or float(np.sqrt(np.mean(seg**2))) < QUIET:
        return None
    lo, hi = max(0, start - LAG), min(y.size, start + WIN + LAG)
    ref = y[lo:hi]
    if ref.size <= seg.size:
        return None
    n = 1 << (ref.size + seg.size).bit_length()  # np.correlate(ref, seg, "valid") by FFT
    full = np.fft.irfft(np.fft.rfft(ref, n) * np.conj(np.fft.rfft(seg, n)), n)
    c = full[: ref.size - seg.size + 1]
    sq = np.concatenate(([0.0], np.cumsum(ref**2)))
    e = sq[seg.size :] - sq[: ref.size - seg.size + 1]
    score = c / np.sqrt(e * float(np.sum(seg**2)) + 1e-9)
    best = int(np.argmax(score))
    # Below MATCH it is not the same audio (another turn's answer), nothing to align.
    return lo + best - start if score[best] >= MATCH else None


def _diff(
    x: np.ndarray[Any, Any], y: np.ndarray[Any, Any], d: int, lo: int = 0, hi: int = 1 << 40
) -> int | None:
    """Max abs of ``x[i] - y[i + d]`` where both have a sample (``lo <= i < hi``)."""
    i0, i1 = max(EDGE, -d, lo), min(x.size - EDGE, y.size - d, hi)
    return int(np.max(np.abs(x[i0:i1] - y[i0 + d : i1 + d]))) if i1 > i0 else None


def _one(a: Answer, ref: Answer, kind: str) -> dict[str, Any]:
    x, y = _pcm(a.audio), _pcm(ref.audio)
    lag = _lag(x, y, x.size // 2 - WIN // 2) if not a.seams else None
    jumps: list[int | None] = []
    near: list[int] = []  # max abs diff within WIN of each continuous seam
    for seam in a.seams:
        # The nearest audio loud enough to align, each side (up to 0.75 s away).
        before = next(
            (d for k in range(1, 6) if (d := _lag(x, y, seam - k * WIN)) is not None), None
        )
        after = next((d for k in range(5) if (d := _lag(x, y, seam + k * WIN)) is not None), None)
        lag = next((d for d in (lag, before, after) if d is not None), None)
        jumps.append(None if before is None or after is None else after - before)
        if before is not None and before == after:
            local = _diff(x, y, before, seam - WIN, seam + WIN)
            near += [] if local is None else [local]
    if not a.seams and lag is not None:  # unmoved: a window mid-answer, for comparison
        local = _diff(x, y, lag, x.size // 2 - WIN, x.size // 2 + WIN)
        near += [] if local is None else [local]
    return {
        "kind": kind,
        "status": a.status,
        "moves": a.moves,
        "other_replica": a.moves_other > 0,
        "lag": lag,
        "seam_jumps": jumps,  # samples skipped (+) or repeated (-) at each seam
        "max_abs_diff": None if lag is None else _diff(x, y, lag),
        "max_abs_diff_at_seams": max(near, default=None),
        "max_abs_diff_unaligned": _diff(x, y, 0),
        "len_diff_samples": int(x.size - y.size),
    }


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    jumps = [j for r in rows for j in r["seam_jumps"]]
    diffs = [r["max_abs_diff"] for r in rows if r["max_abs_diff"] is not None]
    return {
        "answers": len(rows),
        "identical": sum(
            1 for r in rows if r["max_abs_diff_unaligned"] == 0 and r["len_diff_samples"] == 0
        ),
        "seams": len(jumps),
        "seams_continuous": sum(1 for j in jumps if j is not None and abs(j) <= 2),
        "seams_not_aligned": sum(1 for j in jumps if j is None),
        "answers_not_aligned": sum(1 for r in rows if r["lag"] is None),
        "max_seam_jump_samples": max((abs(j) for j in jumps if j is not None), default=None),
        "max_abs_diff_aligned": max(diffs, default=None),
        "max_abs_diff_at_seams": max(
            (r["max_abs_diff_at_seams"] for r in rows if r["max_abs_diff_at_seams"] is not None),
            default=None,
        ),
        "within_2_aligned": sum(1 for d in diffs if d <= 2),
        "max_len_diff_samples": max((abs(r["len_diff_samples"]) for r in rows), default=None),
    }


def audio_seams(outs: list[Outcome]) -> dict[str, Any]:
    """Each moved answer's audio (deltas once each, by seq) against the same session's
    first answer, which never moved (the reference backends answer a turn with its own
    audio, so the same clip gets the same answer, give or take where the turn began:
    aligned on the audio before the seam). A gap or a repeat at the seam shows as the
    alignment after it jumping (by more than 2 samples; a seam with no audio loud
    enough, or like the reference's, within 0.75 s on one side is not aligned), and in
    the length. Unmoved answers are compared the same way."""
    unmoved: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    for o in outs:
        if o.overlaps or not o.answers:
            continue
        ref = o.answers[0]
        if ref.moves or ref.status != "completed" or not ref.audio:
            continue
        for a in o.answers[1:]:
            if a.moves:
                moved.append(_one(a, ref, o.kind))
            elif a.status == "completed":
                unmoved.append(_one(a, ref, o.kind))
    out: dict[str, Any] = {}
    for kind in sorted({m["kind"] for m in moved + unmoved}):
        done = [m for m in moved if m["kind"] == kind and m["status"] == "completed"]
        cut = [m for m in moved if m["kind"] == kind and m["status"] != "completed"]
        out[kind] = {
            "unmoved": _stats([m for m in unmoved if m["kind"] == kind]),
            "moved_completed": _stats(done),
            "moved_other_replica_completed": _stats([m for m in done if m["other_replica"]]),
            "moved_not_completed": {
                **_stats(cut),
                "status": dict(Counter(str(m["status"]) for m in cut)),
            },
        }
    out["worst_moved"] = sorted(
        moved,
        key=lambda m: (
            -max((abs(j) for j in m["seam_jumps"] if j is not None), default=0),
            -(m["max_abs_diff"] or 0),
        ),
    )[:4]
    return out


# ---------------------------------------------------------------------- spoken over


def _phase(drop_s: float | None) -> str:
    """Where the drop fell, by the client's clock from the overlap's onset (the proxy
    decides ``barge_in_decision_ms``, 600 by default, after it)."""
    if drop_s is None:
        return "no drop"
    if drop_s < 0:
        return "before onset"
    if drop_s < 0.6:
        return "mid-hold"
    if drop_s < 0.9:
        return "at the decision"
    return "after"


def _verdict(o: dict[str, Any]) -> list[str]:
    status, trunc, later = o["status"], o["truncated"], o["later"]
    tags = []
    if status == "completed" and trunc:
        tags.append("VIOLATION completed and cut")
    if trunc > 1:
        tags.append("VIOLATION truncated twice")
    if o["what"] == "barge_in":
        if status == "cancelled" and trunc == 1:
            tags.append("cut once")
        elif status == "completed":
            tags.append("not cut")
        else:
            tags.append(f"{status}, {trunc} truncated")
        tags.append("turn answered" if "completed" in later else "turn NOT answered")
    else:
        if status == "completed" and not later:
            tags.append("released")
        elif later:
            tags.append("became a turn" + (" (answered)" if "completed" in later else ""))
        if status != "completed":
            tags.append(f"answer {status}")
    return tags


def overlaps(outs: list[Outcome]) -> dict[str, Any]:
    """Counts per (barge-in / backchannel, route kind, where the drop fell)."""
    table: dict[str, Counter[str]] = {}
    for o in outs:
        for ov in o.overlaps:
            key = f"{ov['what']} / {ov['kind']} / {_phase(ov['drop_s'])}"
            row = table.setdefault(key, Counter())
            row["turns"] += 1
            row["aborted"] += int(ov["aborted"])
            row["other replica"] += int(ov["other_replica"])
            for tag in _verdict(ov):
                row[tag] += 1
    return {k: dict(v) for k, v in sorted(table.items())}


def overlap_odd(outs: list[Outcome]) -> list[dict[str, Any]]:
    """Overlap turns that did not end as one with no move would: a barge-in cut once and
    answered, a backchannel released. Failures (``overlap_violations``) first, e.g. a
    barge-in cut once whose turn was never answered."""
    plain = {("barge_in", "cut once"), ("backchannel", "released")}
    odd = [
        {**ov, "verdict": _verdict(ov)}
        for o in outs
        for ov in o.overlaps
        if not any((ov["what"], t) in plain for t in _verdict(ov)) or _fails(ov)
    ]
    # Those README explains last (a turn-based upstream's answer ends at a move).
    odd.sort(
        key=lambda ov: (
            not _fails(ov),
            ov["kind"].startswith("turn") and ov["status"] == "incomplete",
        )
    )
    return odd[:10]


def _fails(ov: dict[str, Any]) -> bool:
    return any(t.startswith("VIOLATION") or t == "turn NOT answered" for t in _verdict(ov))


def overlap_violations(outs: list[Outcome]) -> int:
    return sum(
        1
        for o in outs
        for ov in o.overlaps
        for t in _verdict(ov)
        if t.startswith("VIOLATION") or t == "turn NOT answered"
    )
