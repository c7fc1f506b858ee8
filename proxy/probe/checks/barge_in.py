"""Check 3, barge_in: speak over the assistant -- does its audio stop, and how fast?

From the shared ``overlap`` scenario. Latency is the time from the probe's speech
onset (when its first voiced append left) to the last audio delta of the
interrupted response. The limit is the endpoint's own
``capabilities.target_barge_in_latency_ms`` where it declares one (vLLM-Omni's
presets: ``docs/fidelity.md``, row 10), else the probe's default. The response must
also be reported ended early -- ``response.done`` with ``status: cancelled`` (GA: reason
``turn_detected``) -- and no audio of it may follow that report.

Verdict: ``pass`` when all three hold; ``fail`` when the audio ran on (to its end,
or past the limit, or after the cancel) or the response was never reported
cancelled; ``error`` when the scenario could not be set up.
"""

from __future__ import annotations

from typing import Any

from proxy.probe.context import ProbeContext
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.scenarios import OverlapTrace, overlap_trace

NAME = "barge_in"


def _limit(trace: OverlapTrace, default_ms: int) -> tuple[float, str]:
    caps = trace.capabilities or {}
    target = caps.get("target_barge_in_latency_ms")
    if isinstance(target, int | float) and not isinstance(target, bool) and target > 0:
        return float(target), "declared target"
    return float(default_ms), "probe default"


def analyse(trace: OverlapTrace, default_limit_ms: int) -> CheckResult:
    if trace.error is not None or trace.response is None:
        return CheckResult(NAME, "error", trace.error or "overlap scenario did not run")
    track = trace.response
    assert track.last_audio_t is not None and track.first_audio_t is not None
    limit, source = _limit(trace, default_limit_ms)
    latency = (track.last_audio_t - trace.onset_t) * 1000.0
    after_onset = track.audio_ms - track.audio_ms_at(trace.onset_t)
    ended_early = track.status in ("cancelled", "incomplete")
    data: dict[str, Any] = {
        "latency_ms": round(latency),
        "limit_ms": round(limit),
        "limit_source": source,
        "audio_after_onset_ms": round(after_onset),
        "status": track.status,
        "reason": track.reason,
        "reported_after_onset_ms": (
            round((track.done_t - trace.onset_t) * 1000) if track.done_t is not None else None
        ),
        "deltas_after_done": track.deltas_after_done,
        "audio_after_done_ms": round(track.audio_after_done_ms),
        "response": track.summary(),
    }
    caps = trace.capabilities or {}
    notes = []
    if caps.get("supports_barge_in") is False:
        notes.append("the endpoint declares supports_barge_in=false")
    if latency < 0:
        return CheckResult(
            NAME,
            "error",
            f"the answer ({track.audio_ms:.0f} ms of audio) ended before the probe spoke over it",
            data,
            notes,
        )
    reasons: list[str] = []
    if track.status == "completed" or (trace.dialect == "turn" and track.finished):
        reasons.append(
            f"not interrupted: the answer played on to its end "
            f"({after_onset:.0f} ms of audio after the speech onset)"
        )
    elif latency > limit:
        reasons.append(
            f"audio stopped {latency:.0f} ms after speech onset (limit {limit:.0f} ms, {source})"
        )
    if track.deltas_after_done:
        reasons.append(
            f"reported {track.status} but {track.deltas_after_done} audio deltas "
            f"({track.audio_after_done_ms:.0f} ms) followed"
        )
    if not ended_early and track.status != "completed":
        reasons.append("the response was never reported cancelled")
    if reasons:
        return failed(NAME, reasons, data, notes)
    why = f" ({track.reason})" if track.reason else ""
    return passed(
        NAME,
        f"audio stopped {latency:.0f} ms after speech onset (limit {limit:.0f} ms, {source}); "
        f"response {track.status}{why}",
        data,
        notes,
    )


async def run(ctx: ProbeContext) -> CheckResult:
    return analyse(await overlap_trace(ctx), ctx.settings.barge_in_limit_ms)
