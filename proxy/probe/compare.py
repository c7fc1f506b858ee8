"""``--compare DIRECT_URL``: the same checks against the model server and through the proxy.

Both runs use the same settings, one after the other (the direct one first), never
side by side: the numbers are times, and a model server may hold one session at a
time. Each check gets its verdict on both sides and, where the check measures a
latency, both values and the difference the proxy makes (proxied - direct).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import orjson

from proxy.probe.context import ProbeSettings
from proxy.probe.report import COLOURS, display_width, paint, verdict_label
from proxy.probe.result import CheckResult
from proxy.probe.runner import ProbeReport, Progress, run_probe_checks


def _first_reaction(data: dict[str, Any]) -> Any:
    reactions = data.get("reactions") or []
    return reactions[0].get("after_onset_ms") if reactions else None


def _median_first_audio(data: dict[str, Any]) -> Any:
    spread = data.get("first_audio_ms")
    return spread.get("median") if isinstance(spread, dict) else None


#: check -> (what the latency is, how to read it from the check's data).
LATENCIES: dict[str, tuple[str, Callable[[dict[str, Any]], Any]]] = {
    "full_duplex_input": ("speech onset -> first reaction", _first_reaction),
    "barge_in": (
        "speech onset -> assistant audio stops (median of trials)",
        lambda d: d.get("latency_ms"),
    ),
    "dedup": ("session.resume -> session.resumed", lambda d: d.get("resume_ms")),
    "fairness": ("end of speech -> first audio, median", _median_first_audio),
}


def latency_ms(result: CheckResult) -> float | None:
    trials = result.series.get("trials_ms")
    if trials:  # barge-in with several trials: their median
        return float(sorted(trials)[len(trials) // 2])
    how = LATENCIES.get(result.name)
    value = how[1](result.data) if how else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(slots=True)
class Comparison:
    direct: ProbeReport
    proxied: ProbeReport

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for result in self.proxied.results:
            try:
                other: CheckResult | None = self.direct.result(result.name)
            except KeyError:
                other = None
            direct_ms = latency_ms(other) if other is not None else None
            proxied_ms = latency_ms(result)
            delta = (
                proxied_ms - direct_ms if direct_ms is not None and proxied_ms is not None else None
            )
            rows.append(
                {
                    "check": result.name,
                    "direct": other.verdict if other is not None else None,
                    "proxied": result.verdict,
                    "latency": LATENCIES[result.name][0] if result.name in LATENCIES else None,
                    "direct_ms": direct_ms,
                    "proxied_ms": proxied_ms,
                    "delta_ms": delta,
                }
            )
        return rows

    @property
    def exit_code(self) -> int:
        return self.proxied.exit_code

    def as_dict(self) -> dict[str, Any]:
        return {
            "direct": self.direct.as_dict(),
            "proxied": self.proxied.as_dict(),
            "comparison": self.rows(),
            "exit_code": self.exit_code,
        }


async def run_comparison(
    settings: ProbeSettings,
    direct_url: str,
    *,
    required: tuple[str, ...] | None = None,
    only: tuple[str, ...] | None = None,
    progress: Callable[[str], Progress] | None = None,
) -> Comparison:
    """``progress(label)`` gives each run its own progress display ("direct", "proxied")."""
    direct = await run_probe_checks(
        replace(settings, url=direct_url, api_key=None),
        required=required,
        only=only,
        progress=progress("direct") if progress else None,
    )
    proxied = await run_probe_checks(
        settings, required=required, only=only, progress=progress("proxied") if progress else None
    )
    return Comparison(direct, proxied)


def comparison_json(comparison: Comparison) -> str:
    return orjson.dumps(comparison.as_dict(), option=orjson.OPT_INDENT_2).decode()


def _cell(verdict: str | None, width: int, colour: bool) -> str:
    if verdict is None:
        return "not run".ljust(width)
    label = verdict_label(verdict)
    return paint(label + " " * (width - display_width(label)), COLOURS[verdict], colour)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def render_comparison(comparison: Comparison, *, colour: bool = False) -> str:
    rows = comparison.rows()
    name_w = max([len("CHECK"), *(len(r["check"]) for r in rows)])
    verdict_w = display_width(verdict_label("unsupported"))
    lines = [
        paint("duplex-proxy probe --compare", "1", colour),
        f"direct:  {comparison.direct.url}",
        f"proxied: {comparison.proxied.url}",
        "",
        f"{'CHECK':<{name_w}}  {'DIRECT':<{verdict_w}}  {'PROXIED':<{verdict_w}}  "
        "LATENCY direct -> proxied (delta)",
    ]
    for row in rows:
        latency = ""
        if row["latency"] is not None:
            delta = "" if row["delta_ms"] is None else f" ({row['delta_ms']:+.0f} ms)"
            latency = (
                f"{_ms(row['direct_ms'])} -> {_ms(row['proxied_ms'])}{delta}  [{row['latency']}]"
            )
        lines.append(
            f"{row['check']:<{name_w}}  {_cell(row['direct'], verdict_w, colour)}  "
            f"{_cell(row['proxied'], verdict_w, colour)}  {latency}".rstrip()
        )
    lines.append("")
    fixed = [r["check"] for r in rows if r["direct"] != "pass" and r["proxied"] == "pass"]
    broken = [r["check"] for r in rows if r["direct"] == "pass" and r["proxied"] != "pass"]
    if fixed:
        lines.append(f"passing only through the proxy: {', '.join(fixed)}")
    if broken:
        lines.append(f"passing only directly (the proxy breaks them): {', '.join(broken)}")
    ok = comparison.exit_code == 0
    lines.append(
        paint("PASS" if ok else "FAIL", "32;1" if ok else "31;1", colour)
        + f": through the proxy, exit status {comparison.exit_code}"
    )
    return "\n".join(lines)
