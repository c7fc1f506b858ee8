"""Check 10, gpu_memory: what the probe's load costs the GPU, and whether it comes back.

Needs ``--metrics-url`` (the model server's Prometheus endpoint; series in
``proxy/probe/metrics.py``): the probe samples it before the first check (the
baseline), all through the checks (each sample labelled with the check running),
and after the last one until the numbers settle. Reported: baseline, peak and
after-load GPU memory and KV-cache usage, and the growth per session -- the peak
while the ``fairness`` check held its N sessions (else ``capacity`` its K), above
the baseline, divided by N (K).

Verdict: ``fail`` when the KV cache reached ``KV_FULL`` (sessions would be
preempted or refused), when the GPU memory reached ``MEMORY_FULL`` of the total
the exporter reports, or when after the load KV usage or DCGM frame-buffer memory
did not come back near the baseline (``KV_SLACK``; memory: within
``MEMORY_SLACK_MB`` or half the load's growth, whichever is larger) -- sessions that
ended still hold the GPU. ``unsupported`` without a metrics URL, or when the endpoint
exports none of the known series; ``error`` when it cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy.probe.context import ProbeContext
from proxy.probe.metrics import AFTER, BEFORE, FB_USED, KV_USAGE, OMNI_PEAK, Sample
from proxy.probe.result import CheckResult, failed, passed

NAME = "gpu_memory"
KV_FULL = 0.95
KV_SLACK = 0.05
MEMORY_FULL = 0.95
MEMORY_SLACK_MB = 256.0
SETTLE_S = 5.0
#: Checks that hold a known number of sessions at once, in order of preference.
LOAD_PHASES = ("fairness", "capacity")


def _values(samples: list[Sample], key: str) -> list[float]:
    values = (getattr(s, key) for s in samples)
    return [v for v in values if v is not None]


def _settled(baseline: Sample) -> Callable[[list[Sample]], bool]:
    """Whether the after-load samples are back near the baseline (then sampling stops)."""

    def done(after: list[Sample]) -> bool:
        last = after[-1]
        kv_back = (
            last.kv_usage is None
            or baseline.kv_usage is None
            or last.kv_usage <= baseline.kv_usage + KV_SLACK
        )
        memory_back = (
            last.memory_mb is None
            or baseline.memory_mb is None
            or last.source != FB_USED
            or last.memory_mb <= baseline.memory_mb + MEMORY_SLACK_MB
        )
        return kv_back and memory_back

    return done


async def run(ctx: ProbeContext) -> CheckResult:
    sampler = ctx.sampler
    if ctx.settings.metrics_url is None or sampler is None:
        return CheckResult(
            NAME, "unsupported", "not measured: no --metrics-url (the model server's /metrics)"
        )
    before = [s for s in sampler.samples if s.phase == BEFORE]
    if before:
        await sampler.settle(SETTLE_S, _settled(before[-1]))
    else:
        await sampler.stop()
    return analyse(sampler.samples, sampler.errors, ctx.settings.metrics_url, _load_sizes(ctx))


def _load_sizes(ctx: ProbeContext) -> dict[str, int]:
    return {phase: ctx.loaded[phase] for phase in LOAD_PHASES if ctx.loaded.get(phase)}


def analyse(
    samples: list[Sample], errors: list[str], url: str, sizes: dict[str, int]
) -> CheckResult:
    series = {"samples": [[s.t, s.phase, s.memory_mb, s.kv_usage] for s in samples]}
    if not samples:
        why = errors[0] if errors else "no answer"
        return CheckResult(NAME, "error", f"cannot read {url}: {why}", {"url": url})
    known = [s for s in samples if s.memory_mb is not None or s.kv_usage is not None]
    if not known:
        names = ", ".join((FB_USED, OMNI_PEAK, *KV_USAGE))
        return CheckResult(NAME, "unsupported", f"{url} exports none of {names}", {"url": url})
    before = [s for s in known if s.phase == BEFORE] or known[:1]
    after = [s for s in known if s.phase == AFTER] or known[-1:]
    base, last = before[-1], after[-1]
    memory, kv = _values(known, "memory_mb"), _values(known, "kv_usage")
    data: dict[str, Any] = {
        "url": url,
        "memory_source": next((s.source for s in known if s.source), None),
        "samples": len(samples),
        "scrape_errors": len(errors),
        "baseline_mb": base.memory_mb,
        "peak_mb": max(memory) if memory else None,
        "after_mb": last.memory_mb,
        "total_mb": base.total_mb,
        "kv_baseline": base.kv_usage,
        "kv_peak": max(kv) if kv else None,
        "kv_after": last.kv_usage,
    }
    data.update(_per_session(known, base, sizes))
    reasons = _problems(data)
    summary = _summary(data)
    result = failed(NAME, reasons, data, []) if reasons else passed(NAME, summary, data, [])
    if reasons:
        result.summary += f" ({summary})"
    result.series = series
    return result


def _per_session(samples: list[Sample], base: Sample, sizes: dict[str, int]) -> dict[str, Any]:
    for phase in LOAD_PHASES:
        during = [s for s in samples if s.phase == phase]
        count = sizes.get(phase, 0)
        if not during or count <= 0:
            continue
        out: dict[str, Any] = {"load_phase": phase, "load_sessions": count}
        memory = _values(during, "memory_mb")
        if memory and base.memory_mb is not None:
            out["growth_per_session_mb"] = round((max(memory) - base.memory_mb) / count, 1)
        kv = _values(during, "kv_usage")
        if kv and base.kv_usage is not None:
            out["kv_per_session"] = round((max(kv) - base.kv_usage) / count, 4)
        return out
    return {"load_phase": None}


def _problems(data: dict[str, Any]) -> list[str]:
    reasons: list[str] = []
    kv_peak, kv_base, kv_after = data["kv_peak"], data["kv_baseline"], data["kv_after"]
    if kv_peak is not None and kv_peak >= KV_FULL:
        reasons.append(f"KV cache {kv_peak:.0%} full at the peak (limit {KV_FULL:.0%})")
    if kv_after is not None and kv_base is not None and kv_after > kv_base + KV_SLACK:
        reasons.append(
            f"KV cache {kv_after:.0%} after the load vs {kv_base:.0%} before "
            f"(allowed +{KV_SLACK:.0%}): ended sessions still hold it"
        )
    peak, total = data["peak_mb"], data["total_mb"]
    if peak is not None and total and peak / total >= MEMORY_FULL:
        reasons.append(
            f"GPU memory {peak:.0f} of {total:.0f} MiB at the peak (limit {MEMORY_FULL:.0%})"
        )
    base, after = data["baseline_mb"], data["after_mb"]
    if data["memory_source"] == FB_USED and base is not None and after is not None:
        slack = max(MEMORY_SLACK_MB, (peak - base) / 2 if peak is not None else 0.0)
        if after - base > slack:
            reasons.append(
                f"GPU memory {after - base:+.0f} MiB after the load vs before (allowed "
                f"+{slack:.0f}): ended sessions did not give it back"
            )
    return reasons


def _summary(data: dict[str, Any]) -> str:
    parts: list[str] = []
    if data["peak_mb"] is not None:
        parts.append(
            f"GPU memory {_mb(data['baseline_mb'])} before, {_mb(data['peak_mb'])} peak, "
            f"{_mb(data['after_mb'])} after ({data['memory_source']})"
        )
    if data.get("growth_per_session_mb") is not None:
        parts.append(
            f"{data['growth_per_session_mb']:+.0f} MiB per session "
            f"({data['load_sessions']} at once in {data['load_phase']})"
        )
    if data["kv_peak"] is not None:
        parts.append(
            f"KV cache {data['kv_baseline']:.0%} -> {data['kv_peak']:.0%} peak -> "
            f"{data['kv_after']:.0%} after (full at {KV_FULL:.0%})"
        )
    return "; ".join(parts)


def _mb(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} MiB"
