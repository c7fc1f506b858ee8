"""The HTML report's figures, drawn with matplotlib (the ``report`` extra) as base64 PNGs.

Each function takes one or more labelled reports (one run, or ``direct`` and
``proxied`` from ``--compare``) and returns a PNG as base64, or None when no
report has the numbers it needs.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from proxy.probe.runner import ProbeReport

Labelled = Sequence[tuple[str, ProbeReport]]
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # the extra is optional: say how to get it
        raise RuntimeError("--report needs matplotlib: pip install 'duplex-proxy[report]'") from exc
    matplotlib.use("Agg")  # no display: draw into memory
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> str:
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _series(reports: Labelled, check: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for label, report in reports:
        for result in report.results:
            if result.name == check and (result.series or result.data):
                out.append((label, result.series, result.data))
    return out


def barge_in(reports: Labelled) -> str | None:
    """Assistant audio received around the user's speech onset; where it stopped; the limit."""
    runs = [(label, s) for label, s, _ in _series(reports, "barge_in") if s.get("audio")]
    if not runs:
        return None
    plt = _pyplot()
    fig, (curve, bars) = plt.subplots(1, 2, figsize=(10, 3.6), width_ratios=(2, 1))
    for i, (label, series) in enumerate(runs):
        points = series["audio"]
        curve.step(
            [p[0] for p in points],
            [p[1] for p in points],
            where="post",
            label=label,
            color=COLOURS[i % len(COLOURS)],
        )
    curve.axvline(0, color="black", linestyle=":", label="user starts speaking")
    limit = runs[0][1].get("limit_ms")
    if limit:
        curve.axvline(limit, color="grey", linestyle="--", label=f"limit {limit} ms")
    curve.set_xlabel("ms since the user's speech onset")
    curve.set_ylabel("assistant audio received (ms)")
    curve.set_title("Barge-in: does the assistant's audio stop?")
    curve.legend(fontsize=8)
    for i, (label, series) in enumerate(runs):
        trials = series.get("trials_ms") or [series.get("latency_ms") or 0]
        colour = COLOURS[i % len(COLOURS)]
        bars.boxplot([trials], positions=[i], widths=0.5, showfliers=False)
        bars.scatter([i] * len(trials), trials, color=colour, zorder=3, label=label)
    bars.set_xticks(range(len(runs)), [label for label, _ in runs])
    if limit:
        bars.axhline(limit, color="grey", linestyle="--")
    bars.set_ylim(bottom=0)
    bars.set_ylabel("onset -> last audio (ms), each trial")
    bars.set_title("Barge-in latency distribution")
    return _png(fig)


def fairness(reports: Labelled) -> str | None:
    """Per session: time to first audio and throughput."""
    runs = [
        (label, d["per_session"])
        for label, _, d in _series(reports, "fairness")
        if d.get("per_session")
    ]
    if not runs:
        return None
    plt = _pyplot()
    fig, (latency, rate) = plt.subplots(1, 2, figsize=(10, 3.6))
    width = 0.8 / len(runs)
    for i, (label, rows) in enumerate(runs):
        xs = [row["session"] + i * width for row in rows]
        colour = COLOURS[i % len(COLOURS)]
        latency.bar(
            xs, [row.get("first_audio_ms", 0) for row in rows], width, label=label, color=colour
        )
        rate.bar(xs, [row.get("throughput", 0) for row in rows], width, label=label, color=colour)
    sessions = sorted({row["session"] for _, rows in runs for row in rows})
    for axis in (latency, rate):
        axis.set_xticks(
            [n + width * (len(runs) - 1) / 2 for n in sessions], [str(n) for n in sessions]
        )
        axis.set_xlabel("session")
    latency.set_title("First audio after the end of speech, per session")
    latency.set_ylabel("ms")
    rate.axhline(1.0, color="grey", linestyle="--", label="real time")
    rate.set_title("Audio throughput, per session")
    rate.set_ylabel("x real time")
    latency.legend(fontsize=8, loc="lower right")
    rate.legend(fontsize=8, loc="lower right")
    return _png(fig)


def gpu_memory(reports: Labelled) -> str | None:
    """GPU memory and KV-cache usage over the run, the checks' phases marked."""
    runs = [
        (label, s["samples"]) for label, s, _ in _series(reports, "gpu_memory") if s.get("samples")
    ]
    if not runs:
        return None
    plt = _pyplot()
    fig, memory = plt.subplots(figsize=(10, 3.6))
    kv = memory.twinx()
    for i, (label, samples) in enumerate(runs):
        t0 = samples[0][0]
        ts = [s[0] - t0 for s in samples]
        colour = COLOURS[i % len(COLOURS)]
        memory.plot(ts, [s[2] for s in samples], color=colour, label=f"{label}: GPU memory")
        kv.plot(
            ts, [s[3] for s in samples], color=colour, linestyle=":", label=f"{label}: KV cache"
        )
        if i == 0:
            _phases(memory, ts, [s[1] for s in samples])
    memory.set_xlabel("s since the first sample")
    memory.set_ylabel("GPU memory (MiB)")
    kv.set_ylabel("KV cache usage (fraction)")
    memory.set_title("GPU memory over the probe's load")
    memory.legend(loc="upper left", fontsize=8)
    kv.legend(loc="upper right", fontsize=8)
    return _png(fig)


def _phases(axis: Any, ts: list[float], phases: list[str]) -> None:
    """Shade every other check's stretch of time and name it (the first run's phases)."""
    start = 0
    for end in range(1, len(ts) + 1):
        if end < len(ts) and phases[end] == phases[start]:
            continue
        if phases[start] not in ("before", "after"):
            axis.axvspan(ts[start], ts[end - 1], color="#f0f0f0", zorder=0)
            axis.text(
                (ts[start] + ts[end - 1]) / 2,
                0.02,
                phases[start],
                rotation=90,
                fontsize=7,
                ha="center",
                va="bottom",
                transform=axis.get_xaxis_transform(),
                color="#555",
            )
        start = end


def backpressure(reports: Labelled) -> str | None:
    """Output requested while the probe did not read, and what reached it once it read again."""
    runs = [(label, s) for label, s, _ in _series(reports, "backpressure") if s.get("timeline")]
    if not runs:
        return None
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(10, 3.6))
    received = axis.twinx()
    for i, (label, series) in enumerate(runs):
        rows = series["timeline"]
        colour = COLOURS[i % len(COLOURS)]
        axis.plot(
            [r[0] for r in rows],
            [r[1] for r in rows],
            color=colour,
            linestyle="--",
            label=f"{label}: output requested",
        )
        received.plot(
            [r[0] for r in rows],
            [r[2] for r in rows],
            color=colour,
            label=f"{label}: output received",
        )
        axis.axvline(series.get("stalled_s", 0), color=colour, linestyle=":")
    axis.set_xlabel("s since the probe stopped reading (dotted: it reads again)")
    axis.set_ylabel("requested (MB, dashed)")
    received.set_ylabel("received (MB, solid)")
    axis.set_title("Backpressure: what the endpoint queued for a client that stopped reading")
    axis.legend(fontsize=8, loc="center left")
    received.legend(fontsize=8, loc="center right")
    return _png(fig)


FIGURES = (
    ("barge_in", "Barge-in", barge_in),
    ("fairness", "Fairness across sessions", fairness),
    ("gpu_memory", "GPU memory", gpu_memory),
    ("backpressure", "Backpressure buffer growth", backpressure),
)
