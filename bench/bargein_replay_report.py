"""``bench/bargein_replay.py``'s figures: what one case replayed came to (``Replay``), one
row per case, and the summary by kind of clip (how many interrupted, cut, answered by a
turn after the answer; detection and stop times from the labelled onset)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from bargein_cases import Case


@dataclass
class Replay:
    case: Case
    interrupted_ms: float | None = None  # speech_started while assistant audio played
    cut_ms: float | None = None  # response.done cancelled
    stop_ms: float | None = None  # last delta of the cut response
    windows: list[dict[str, Any]] = field(default_factory=list)
    played: list[int] = field(default_factory=list)  # sample each delta began playing at
    after: int = 0  # speech_started after the clip began, the answer over and played out


def case_row(r: Replay, label: str) -> dict[str, Any]:
    """One case's row: ``label`` names it (the clip, and where it began if several)."""
    case = r.case
    onset = case.onset_ms
    detect = None if r.interrupted_ms is None or onset is None else r.interrupted_ms - onset
    cut = r.cut_ms is not None and onset is not None and r.stop_ms is not None
    stop = r.stop_ms - onset if cut and r.stop_ms is not None and onset is not None else None
    return {
        "clip": label,
        "kind": case.kind,
        "interrupted": r.interrupted_ms is not None,
        "cut": r.cut_ms is not None,
        "detect_ms": detect,
        "stop_ms": stop,
        "turn_after": r.after,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows by kind of clip."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    return {
        k: {
            "n": len(v),
            "interrupted": sum(r["interrupted"] for r in v),
            "cut": sum(r["cut"] for r in v),
            "turn_after": sum(r["turn_after"] > 0 for r in v),
            "detect_p50": float(
                np.percentile([r["detect_ms"] for r in v if r["detect_ms"] is not None], 50)
            )
            if any(r["detect_ms"] is not None for r in v)
            else None,
            "detect_p95": float(
                np.percentile([r["detect_ms"] for r in v if r["detect_ms"] is not None], 95)
            )
            if any(r["detect_ms"] is not None for r in v)
            else None,
            "stop_p95": float(
                np.percentile([r["stop_ms"] for r in v if r["stop_ms"] is not None], 95)
            )
            if any(r["stop_ms"] is not None for r in v)
            else None,
        }
        for k, v in by_kind.items()
    }
