"""Figures of ``bench/agents_sdk.py``: per mode and clip class, what the Agents SDK saw."""

from __future__ import annotations

from typing import Any

from agents_sdk_session import Session


def class_figures(group: list[Session], kind: str, reply_ms: int) -> dict[str, Any]:
    """One mode's sessions of one clip class (``kind`` in the corpus's manifest)."""
    ok = [s for s in group if s.error is None]
    figures: dict[str, Any] = {
        "sessions": len(ok),
        # Sessions given an SDK audio_interrupted after the stimulus began: for a GA
        # client each is an interruption (playback flushed, the answer truncated).
        "interrupted": sum(s.interruptions > 0 for s in ok),
        "audio_interrupted_events": sum(s.interruptions for s in ok),
        # ... with an answer under way (the rest: a new turn's, after the answer played out)
        "interrupted_in_answer": sum(s.interruptions_in_answer > 0 for s in ok),
        "cuts": sum(s.cut for s in ok),  # sessions with a cancelled response
        "answered_whole": sum(s.answered_whole(reply_ms) for s in ok),
        "errors": len(group) - len(ok),
        "timeouts": sum(s.timeout for s in ok),
    }
    if kind == "speech":  # real barge-ins: each must interrupt, and once
        figures["barge_ins_interrupted"] = figures["interrupted"]
        figures["interrupted_once"] = sum(s.interruptions == 1 for s in ok)
    return figures


def summarize(sessions: list[Session], modes: list[str], reply_ms: int) -> dict[str, Any]:
    """table[mode] = per class figures, invalid GA events and SDK errors; plus totals."""
    table: dict[str, Any] = {}
    for mode in modes:
        rs = [s for s in sessions if s.case.mode == mode]
        kinds = sorted({s.case.kind for s in rs})
        invalid: dict[str, str] = {}
        for s in rs:
            for kind, why in s.invalid.items():
                invalid.setdefault(kind, why)
        table[mode] = {
            "classes": {
                k: class_figures([s for s in rs if s.case.kind == k], k, reply_ms) for k in kinds
            },
            "invalid_ga_events": sum(s.invalid_events for s in rs),
            "invalid_ga_event_types": invalid,
            "sdk_errors": sum(len(s.sdk_errors) for s in rs),
            "errors": sum(s.error is not None for s in rs),
        }
    false = [s for s in sessions if s.case.kind != "speech" and s.error is None]
    speech = [s for s in sessions if s.case.kind == "speech" and s.error is None]
    table["totals"] = {
        "sessions": len(sessions),
        "false_class_sessions": len(false),
        "false_class_interrupted": sum(s.interruptions > 0 for s in false),
        "false_class_interrupted_in_answer": sum(s.interruptions_in_answer > 0 for s in false),
        "false_class_cuts": sum(s.cut for s in false),
        "barge_ins": len(speech),
        "barge_ins_interrupted": sum(s.interruptions > 0 for s in speech),
        "invalid_ga_events": sum(s.invalid_events for s in sessions),
        "errors": sum(s.error is not None for s in sessions),
    }
    return table


def render(table: dict[str, Any], modes: list[str]) -> str:
    """A Markdown table: per class, ``interrupted/sessions (in answer) cut N`` in each mode."""
    kinds = sorted({k for m in modes for k in table[m]["classes"]})
    lines = ["| class | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    for kind in kinds:
        cells = []
        for mode in modes:
            f = table[mode]["classes"].get(kind)
            cells.append(
                "-"
                if f is None
                else f"{f['interrupted']}/{f['sessions']} ({f['interrupted_in_answer']} in answer)"
                f" cut {f['cuts']}"
            )
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    invalid = " | ".join(str(table[m]["invalid_ga_events"]) for m in modes)
    lines.append(f"| invalid GA events | {invalid} |")
    return "\n".join(lines)
