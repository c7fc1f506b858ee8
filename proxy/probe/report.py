"""Show a probe report: a table for people (verdict colours), JSON for CI; progress on stderr."""

from __future__ import annotations

import shutil
import sys
import textwrap
import time
import unicodedata
from typing import TextIO

import orjson

from proxy.probe.result import CheckResult
from proxy.probe.runner import ProbeReport

COLOURS = {"pass": "32", "fail": "31", "unsupported": "33", "error": "35"}
#: One narrow character each: an ambiguous-width symbol (like a circle) is drawn two
#: columns wide by some terminals and would push its row out of line.
SYMBOLS = {"pass": "✓", "fail": "✗", "unsupported": "-", "error": "!"}
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes (wide and full-width characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def verdict_label(verdict: str) -> str:
    return f"{SYMBOLS[verdict]} {verdict}"


#: Wide enough for every verdict, so the RESULT column starts at one place on every row.
VERDICT_WIDTH = max(display_width(verdict_label(v)) for v in SYMBOLS)


def timing(result: CheckResult) -> str:
    """How long the check took, or whose scenario it read its numbers from."""
    if result.shared_with:
        return f"measured in the {result.shared_with} scenario"
    return f"{result.duration_ms / 1000:.1f} s"


def paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def to_json(report: ProbeReport) -> str:
    return orjson.dumps(report.as_dict(), option=orjson.OPT_INDENT_2).decode()


def render_table(report: ProbeReport, *, colour: bool = False, width: int | None = None) -> str:
    width = width or shutil.get_terminal_size((120, 24)).columns
    name_w = max(len(r.name) for r in report.results) if report.results else 10
    verdict_w = VERDICT_WIDTH
    text_w = max(30, width - name_w - verdict_w - 4)
    model = f"  model={report.model}" if report.model else ""
    lines = [paint(f"duplex-proxy probe  {report.url}{model}", "1", colour)]
    endpoint = report.endpoint
    if endpoint:
        bits = [f"{endpoint.get('dialect')} dialect"]
        if endpoint.get("implementation_level"):
            bits.append(str(endpoint["implementation_level"]))
        if endpoint.get("proxy_mode"):
            bits.append(f"proxy mode {endpoint['proxy_mode']}")
        if endpoint.get("duplex_refused"):
            bits.append("?duplex=1 refused")
        lines.append("endpoint: " + ", ".join(bits))
    lines.append("")
    lines.append(f"{'CHECK':<{name_w}}  {'VERDICT':<{verdict_w}}  RESULT")
    for result in report.results:
        lines.extend(_row(result, name_w, verdict_w, text_w, colour))
    lines.append("")
    lines.append(_footer(report, colour))
    return "\n".join(lines)


def _row(result: CheckResult, name_w: int, verdict_w: int, text_w: int, colour: bool) -> list[str]:
    wrapped = textwrap.wrap(result.summary, text_w) or [""]
    if result.name != "declared" and (result.shared_with or result.duration_ms >= 50):
        # Kept whole: a time split over two lines reads as two numbers.
        took = f"[{timing(result)}]"
        if display_width(wrapped[-1]) + 2 + len(took) <= text_w:
            wrapped[-1] += "  " + took
        else:
            wrapped.append(took)
    for note in result.notes:
        wrapped += textwrap.wrap("note: " + note, text_w)
    verdict = verdict_label(result.verdict)
    padded = verdict + " " * (verdict_w - display_width(verdict))
    first = f"{result.name:<{name_w}}  " + paint(padded, COLOURS[result.verdict], colour)
    pad = " " * (name_w + verdict_w + 4)
    return [f"{first}  {wrapped[0]}", *(pad + line for line in wrapped[1:])]


def _footer(report: ProbeReport, colour: bool) -> str:
    required = [r for r in report.results if r.name in report.required]
    good = sum(1 for r in required if r.verdict == "pass")
    took = f"{report.duration_s:.1f} s"
    unsupported = report.not_applicable
    aside = f", {', '.join(unsupported)} unsupported" if unsupported else ""
    if report.ok:
        return paint(
            f"PASS: {good}/{len(required)} required checks passed{aside} ({took})",
            "32;1",
            colour,
        )
    why = f"{good}/{len(required)} required checks passed{aside}"
    if report.failing:
        why += f"; not passing: {', '.join(report.failing)}"
    if report.turn_based:
        why += "; the endpoint is turn-based, not full duplex"
    return paint(f"FAIL: {why} ({took})", "31;1", colour)


class TerminalProgress:
    """A spinner line on a terminal, one plain line per check otherwise (always stderr)."""

    def __init__(
        self, stream: TextIO | None = None, *, colour: bool | None = None, prefix: str = ""
    ) -> None:
        self.stream = stream or sys.stderr
        #: Which run this is (``--compare`` makes two).
        self.prefix = prefix
        self.live = self.stream.isatty()
        self.colour = self.live if colour is None else colour
        self._name = ""
        self._label = ""
        self._started = 0.0
        self._frame = 0
        self._task: object = None

    def start(self, name: str, index: int, total: int) -> None:
        self._name = name
        self._label = f"{self.prefix}[{index + 1}/{total}] {name}"
        self._started = time.monotonic()
        if self.live:
            import asyncio

            self._task = asyncio.get_running_loop().create_task(self._spin())
        else:
            self._write(f"probe {self._label} ...\n")

    async def _spin(self) -> None:
        import asyncio

        while True:
            elapsed = time.monotonic() - self._started
            frame = SPINNER[self._frame % len(SPINNER)]
            self._frame += 1
            self._write(f"\r\x1b[2K{frame} {self._label}  {elapsed:4.1f} s")
            await asyncio.sleep(0.1)

    def finish(self, result: CheckResult) -> None:
        import asyncio

        if isinstance(self._task, asyncio.Task):
            self._task.cancel()
            self._task = None
        symbol = paint(
            SYMBOLS[result.verdict] + " " + result.verdict, COLOURS[result.verdict], self.colour
        )
        prefix = "\r\x1b[2K" if self.live else ""
        self._write(f"{prefix}{symbol} {self._label}  {timing(result)}\n")

    def close(self) -> None:
        self.stream.flush()

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
