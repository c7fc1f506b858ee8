"""Run the checks in order against one endpoint and collect the report.

Checks run one after another, never side by side: most measure time (barge-in
latency, first audio), and a real model server may hold one session at a time.
A check that raises or overruns its time limit is reported as ``error``; if not
even the first session opens, the rest are skipped.

Exit status: a check that found a defect (``fail``) or could not measure
(``error``) fails the run; one that cannot apply to this endpoint
(``unsupported``: it says it cannot, or its dialect offers nothing to measure)
does not, unless the caller named it (``--require`` / ``--checks``): a check asked
for by name must pass. A turn-based endpoint never exits 0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

from proxy.probe.checks import CHECKS
from proxy.probe.context import ProbeContext, ProbeSettings
from proxy.probe.metrics import MetricsSampler
from proxy.probe.result import CHECK_NAMES, CheckResult
from proxy.probe.stimulus import load_stimulus


class Progress(Protocol):
    def start(self, name: str, index: int, total: int) -> None: ...

    def finish(self, result: CheckResult) -> None: ...

    def close(self) -> None: ...


class NoProgress:
    def start(self, name: str, index: int, total: int) -> None:
        pass

    def finish(self, result: CheckResult) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass(slots=True)
class ProbeReport:
    url: str
    model: str | None
    required: tuple[str, ...]
    results: list[CheckResult] = field(default_factory=list)
    endpoint: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    #: The required checks were named by the caller: ``unsupported`` fails them too.
    named: bool = False

    def result(self, name: str) -> CheckResult:
        for result in self.results:
            if result.name == name:
                return result
        raise KeyError(name)

    @property
    def turn_based(self) -> bool:
        return self.endpoint.get("dialect") == "turn"

    @property
    def failing(self) -> list[str]:
        """Required checks that fail the run (see the module's exit status rule)."""
        bad = ("fail", "error", "unsupported") if self.named else ("fail", "error")
        return [r.name for r in self.results if r.name in self.required and r.verdict in bad]

    @property
    def not_applicable(self) -> list[str]:
        """Required checks reported ``unsupported`` that do not fail the run."""
        if self.named:
            return []
        return [
            r.name for r in self.results if r.name in self.required and r.verdict == "unsupported"
        ]

    @property
    def ok(self) -> bool:
        # A turn-based endpoint is not full duplex, however honest its declaration.
        return not self.failing and not self.turn_based and bool(self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "model": self.model,
            "endpoint": self.endpoint,
            "required": list(self.required),
            "ok": self.ok,
            "exit_code": self.exit_code,
            "failing": self.failing,
            "not_applicable": self.not_applicable,
            "turn_based": self.turn_based,
            "duration_s": round(self.duration_s, 1),
            "checks": [r.as_dict() for r in self.results],
        }


def default_required(settings: ProbeSettings) -> tuple[str, ...]:
    """Every check, except ``gpu_memory`` when there is no metrics URL to judge it by."""
    if settings.metrics_url is not None:
        return CHECK_NAMES
    return tuple(n for n in CHECK_NAMES if n != "gpu_memory")


def parse_checks(spec: str) -> tuple[str, ...]:
    """``"a,b"`` -> those check names (validated)."""
    names = tuple(n.strip() for n in spec.split(",") if n.strip())
    unknown = [n for n in names if n not in CHECK_NAMES]
    if unknown or not names:
        named = ", ".join(unknown) if unknown else repr(spec)
        raise ValueError(f"unknown check(s) {named}; known: {', '.join(CHECK_NAMES)}")
    return names


def _endpoint(ctx: ProbeContext) -> dict[str, Any]:
    info = ctx.endpoint
    if info is None:
        return {}
    caps = info.capabilities or {}
    proxy = caps.get("proxy")
    return {
        "dialect": info.dialect,
        "url": info.url,
        "implementation_level": caps.get("implementation_level"),
        "proxy_mode": proxy.get("mode") if isinstance(proxy, dict) else None,
        "duplex_refused": info.duplex_refused is not None,
    }


async def _one(ctx: ProbeContext, name: str) -> CheckResult:
    try:
        async with asyncio.timeout(ctx.settings.check_timeout_s):
            return await CHECKS[name](ctx)
    except TimeoutError:
        return CheckResult(name, "error", f"timed out after {ctx.settings.check_timeout_s:.0f} s")
    except (aiohttp.ClientError, OSError) as exc:
        return CheckResult(name, "error", f"connection failed: {exc}")
    except Exception as exc:  # a probe defect must not hide the other checks' results
        return CheckResult(name, "error", f"probe failure: {type(exc).__name__}: {exc}")


async def _timed(
    ctx: ProbeContext, name: str, index: int, total: int, shown: Progress
) -> CheckResult:
    ctx.current = name
    shown.start(name, index, total)
    t0 = time.monotonic()
    if name != "declared" and ctx.endpoint is None:
        result = CheckResult(name, "error", "skipped: no session could be opened")
    else:
        result = await _one(ctx, name)
    result.duration_ms = round((time.monotonic() - t0) * 1000)
    result.shared_with = ctx.reused.get(name)
    shown.finish(result)
    return result


async def run_probe_checks(
    settings: ProbeSettings,
    *,
    required: Sequence[str] | None = None,
    only: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ProbeReport:
    """Probe ``settings.url``; ``only`` runs a subset (tests), the rest are not reported.

    ``required`` or ``only`` names the checks that must pass, ``unsupported`` included."""
    shown = progress or NoProgress()
    stimulus = load_stimulus(settings.speech)
    names = [n for n in CHECK_NAMES if only is None or n in only or n == "declared"]
    wanted = tuple(required) if required is not None else default_required(settings)
    # Checks asked for by name (``--require``, ``--checks``) must pass, as the CLI has it.
    named = required is not None or only is not None
    report = ProbeReport(settings.url, settings.model, wanted, named=named)
    started = time.monotonic()
    key = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else None
    # The key goes only to the endpoint probed; the model server's metrics get a plain session.
    async with aiohttp.ClientSession(headers=key) as http, aiohttp.ClientSession() as plain:
        ctx = ProbeContext(settings, stimulus, http)
        if settings.metrics_url is not None and "gpu_memory" in names:
            ctx.sampler = MetricsSampler(
                plain, settings.metrics_url, lambda: ctx.current, settings.metrics_interval_s
            )
            await ctx.sampler.start()
        try:
            for index, name in enumerate(names):
                report.results.append(await _timed(ctx, name, index, len(names), shown))
        finally:
            if ctx.sampler is not None:
                await ctx.sampler.stop()
        report.endpoint = _endpoint(ctx)
    report.duration_s = time.monotonic() - started
    shown.close()
    return report
