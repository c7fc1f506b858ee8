"""``--report PATH``: one self-contained HTML file (figures inline as base64 PNG).

Verdicts with the line that says why, the numbers behind each check (its data as
JSON), the side-by-side comparison when there are two runs, and the figures from
``plots.py``. Nothing is fetched when the file is opened: it can be attached to a
ticket or archived by CI as it is.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from pathlib import Path

import orjson

from proxy.probe.compare import Comparison
from proxy.probe.plots import FIGURES, Labelled
from proxy.probe.report import SYMBOLS, timing
from proxy.probe.result import CheckResult
from proxy.probe.runner import ProbeReport

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; font-size: 1.2em; }
.meta { color: #666; } table { border-collapse: collapse; width: 100%; margin: 0.6em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.35em 0.5em; text-align: left;
  vertical-align: top; }
th { background: #f4f4f4; } td.v { white-space: nowrap; font-weight: 600; }
.pass { color: #1a7f37; } .fail { color: #cf222e; } .unsupported { color: #9a6700; }
.error { color: #8250df; } .note { color: #555; font-size: 0.92em; }
.banner { padding: 0.6em 1em; border-radius: 6px; font-weight: 600; margin: 1em 0; }
.banner.ok { background: #dafbe1; } .banner.bad { background: #ffebe9; }
details pre { background: #f6f8fa; padding: 0.6em; overflow-x: auto; font-size: 12px; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _verdict(verdict: str | None) -> str:
    if verdict is None:
        return '<td class="v">not run</td>'
    return f'<td class="v {verdict}">{SYMBOLS[verdict]} {verdict}</td>'


def _row(result: CheckResult) -> str:
    notes = "".join(f'<div class="note">note: {_e(n)}</div>' for n in result.notes)
    data = orjson.dumps(result.data, option=orjson.OPT_INDENT_2).decode()
    details = f"<details><summary>numbers</summary><pre>{_e(data)}</pre></details>"
    took = "" if result.name == "declared" else f'<div class="note">{_e(timing(result))}</div>'
    return (
        f"<tr><td><code>{_e(result.name)}</code></td>{_verdict(result.verdict)}"
        f"<td>{_e(result.summary)}{notes}{took}{details}</td></tr>"
    )


def _banner(report: ProbeReport) -> str:
    required = [r for r in report.results if r.name in report.required]
    good = sum(1 for r in required if r.verdict == "pass")
    text = f"{good}/{len(required)} required checks passed"
    if report.not_applicable:
        text += f", {', '.join(report.not_applicable)} unsupported"
    if report.failing:
        text += f"; not passing: {', '.join(report.failing)}"
    if report.turn_based:
        text += "; the endpoint is turn-based, not full duplex"
    kind, word = ("ok", "PASS") if report.ok else ("bad", "FAIL")
    return f'<div class="banner {kind}">{word}: {_e(text)} (exit status {report.exit_code})</div>'


def _section(label: str, report: ProbeReport) -> str:
    endpoint = ", ".join(f"{k} {v}" for k, v in report.endpoint.items() if v not in (None, False))
    rows = "".join(_row(r) for r in report.results)
    return (
        f"<h2>{_e(label)}: <code>{_e(report.url)}</code></h2>"
        f'<div class="meta">model {_e(report.model or "-")}; {_e(endpoint)}; '
        f"{report.duration_s:.1f} s</div>{_banner(report)}"
        "<table><tr><th>check</th><th>verdict</th><th>what was measured, "
        f"against what, and why</th></tr>{rows}</table>"
    )


def _comparison(comparison: Comparison) -> str:
    rows = []
    for row in comparison.rows():
        latency = ""
        if row["latency"] is not None:
            direct = "-" if row["direct_ms"] is None else f"{row['direct_ms']:.0f} ms"
            proxied = "-" if row["proxied_ms"] is None else f"{row['proxied_ms']:.0f} ms"
            delta = "" if row["delta_ms"] is None else f" ({row['delta_ms']:+.0f} ms)"
            latency = (
                f"{direct} &rarr; {proxied}{delta}<div class='note'>{_e(row['latency'])}</div>"
            )
        rows.append(
            f"<tr><td><code>{_e(row['check'])}</code></td>{_verdict(row['direct'])}"
            f"{_verdict(row['proxied'])}<td>{latency}</td></tr>"
        )
    return (
        "<h2>Side by side</h2><table><tr><th>check</th><th>direct</th><th>through the proxy"
        f"</th><th>latency direct &rarr; proxied (delta)</th></tr>{''.join(rows)}</table>"
    )


def _figures(reports: Labelled) -> str:
    out = []
    for _, title, draw in FIGURES:
        png = draw(reports)
        if png is not None:
            out.append(
                f"<figure><figcaption><b>{_e(title)}</b></figcaption>"
                f'<img alt="{_e(title)}" src="data:image/png;base64,{png}"></figure>'
            )
    return "<h2>Figures</h2>" + "".join(out) if out else ""


def render_html(report: ProbeReport | None = None, comparison: Comparison | None = None) -> str:
    if comparison is not None:
        labelled: Labelled = [("direct", comparison.direct), ("proxied", comparison.proxied)]
        body = _comparison(comparison) + _figures(labelled)
        body += "".join(_section(label, r) for label, r in labelled)
        title = f"duplex-proxy probe: {comparison.proxied.url} vs {comparison.direct.url}"
    else:
        assert report is not None
        labelled = [("endpoint", report)]
        body = _section("Endpoint", report) + _figures(labelled)
        title = f"duplex-proxy probe: {report.url}"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>"
        f'<div class="meta">{when}; every check is explained in docs/probe.md</div>'
        f"{body}</body></html>\n"
    )


def write_report(
    path: str | Path, report: ProbeReport | None = None, comparison: Comparison | None = None
) -> Path:
    target = Path(path)
    target.write_text(render_html(report, comparison), encoding="utf-8")
    return target
