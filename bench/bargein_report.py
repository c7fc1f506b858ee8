"""Figures of ``bench/bargein.py``: per mode and decision time, a table and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def summarize(
    results: list[Any], modes: list[str], decisions: list[int | None], classes: tuple[str, ...]
) -> dict[str, Any]:
    """table[mode][decision] = recall, latencies, and per class interruptions and cuts."""
    table: dict[str, Any] = {}
    for mode in modes:
        table[mode] = {}
        for decision in decisions:
            rs = [r for r in results if r.case.mode == mode and r.decision_ms == decision]
            ok = [r for r in rs if r.error is None]
            speech = [r for r in ok if r.case.kind == "speech"]
            detect = [r.detect_ms for r in speech if r.interrupted and r.detect_ms is not None]
            stop = [r.stop_ms for r in speech if r.stop_ms is not None]
            per_class = {}
            for kind in classes:
                group = [r for r in ok if r.case.kind == kind]
                if group:
                    per_class[kind] = {
                        "cases": len(group),
                        "interruptions": sum(r.interrupted for r in group),
                        "cuts": sum(r.barged for r in group),
                        "rate": sum(r.interrupted for r in group) / len(group),
                    }
            table[mode][str(decision)] = {
                "speech_recall": (sum(r.interrupted for r in speech) / len(speech))
                if speech
                else None,
                "speech_cut": sum(r.barged for r in speech),
                "speech_cases": len(speech),
                "detection_ms_p50": pct(detect, 50),
                "detection_ms_p95": pct(detect, 95),
                "stop_ms_p50": pct(stop, 50),
                "stop_ms_p95": pct(stop, 95),
                "classes": per_class,
                "errors": len(rs) - len(ok),
            }
    return table


def render(table: dict[str, Any]) -> str:
    """A Markdown table: one row per mode and decision time."""

    def f(v: Any, fmt: str = "{:.0f}") -> str:
        return "-" if v is None else fmt.format(v)

    classes: list[str] = []
    for by_decision in table.values():
        for t in by_decision.values():
            classes += [k for k in t["classes"] if k not in classes]
    head = "| mode | decision ms | recall | detect p50/p95 ms | stop p50/p95 ms | "
    head += " | ".join(f"{k}: interrupted / cut" for k in classes) + " |"
    lines = [head, "|" + "---|" * (5 + len(classes))]
    for mode, by_decision in table.items():
        for decision, t in by_decision.items():
            cells = []
            for k in classes:
                c = t["classes"].get(k)
                cells.append(
                    "-" if c is None else f"{c['interruptions']}/{c['cases']} / {c['cuts']}"
                )
            lines.append(
                f"| {mode} | {'default' if decision == 'None' else decision} "
                f"| {f(t['speech_recall'], '{:.2f}')} ({t['speech_cases']}) "
                f"| {f(t['detection_ms_p50'])} / {f(t['detection_ms_p95'])} "
                f"| {f(t['stop_ms_p50'])} / {f(t['stop_ms_p95'])} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def plot_sweep(table: dict[str, Any], path: Path) -> None:
    """Recall, false client-visible interruptions per class and latencies against the
    decision time, one line style per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_rate, ax_ms) = plt.subplots(1, 2, figsize=(12, 4.5))
    styles = ["-", "--", ":"]
    for (mode, by_decision), style in zip(table.items(), styles, strict=False):
        xs = [int(d) for d in by_decision if d != "None"]
        rows = [by_decision[str(x)] for x in xs]
        if not xs:
            continue
        ax_rate.plot(xs, [r["speech_recall"] for r in rows], "k" + style, label=f"recall {mode}")
        for kind in rows[0]["classes"]:
            ys = [r["classes"].get(kind, {}).get("rate") for r in rows]
            ax_rate.plot(xs, ys, style, marker="o", label=f"{kind} {mode}")
        ax_ms.plot(
            xs,
            [r["detection_ms_p95"] for r in rows],
            style,
            marker="s",
            label=f"speech_started p95 {mode}",
        )
        ax_ms.plot(
            xs, [r["stop_ms_p95"] for r in rows], style, marker="^", label=f"audio stop p95 {mode}"
        )
    ax_rate.set_xlabel("barge_in_decision_ms")
    ax_rate.set_ylabel("share of cases")
    ax_rate.set_title("recall and client-visible false interruptions")
    ax_rate.legend(fontsize=6, ncol=2)
    ax_ms.set_xlabel("barge_in_decision_ms")
    ax_ms.set_ylabel("ms from speech onset")
    ax_ms.set_title("latency")
    ax_ms.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
