"""What a check concludes: a verdict, one line that says why, and the numbers behind it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["pass", "fail", "unsupported", "error"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "unsupported", "error")

#: Every check, in the order the probe runs and reports them.
CHECK_NAMES = (
    "declared",
    "full_duplex_input",
    "barge_in",
    "truncation",
    "resume",
    "dedup",
    "backpressure",
    "fairness",
    "capacity",
    "gpu_memory",
)


@dataclass(slots=True)
class CheckResult:
    """One check's outcome.

    ``pass``: the endpoint behaved as a full-duplex endpoint must; ``fail``: it did
    not (the summary says how); ``unsupported``: it cannot, and says so (or its
    dialect has no way to); ``error``: the probe could not measure (no connection,
    a timeout before anything could be observed).
    """

    name: str
    verdict: Verdict
    summary: str
    data: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    duration_ms: int = 0
    #: Time series for the HTML report's plots; not part of the JSON (it would bloat CI logs).
    series: dict[str, Any] = field(default_factory=dict)
    #: The check whose scenario this one read instead of running its own (its time is there).
    shared_with: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "summary": self.summary,
            "data": self.data,
            "notes": list(self.notes),
            "duration_ms": self.duration_ms,
        }


def passed(name: str, summary: str, data: dict[str, Any], notes: list[str]) -> CheckResult:
    return CheckResult(name, "pass", summary, data, notes)


def failed(name: str, reasons: list[str], data: dict[str, Any], notes: list[str]) -> CheckResult:
    """A failure whose summary is every reason found, most important first."""
    return CheckResult(name, "fail", "; ".join(reasons), data, notes)
