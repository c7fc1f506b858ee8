"""Check 3, barge_in: speak over the assistant -- does its audio stop, and how fast?

From the shared ``overlap`` scenario. Latency is the time from the probe's speech
onset (when its first voiced append left) to the last audio delta of the
interrupted response. The limit is the endpoint's own
``capabilities.target_barge_in_latency_ms`` where it declares one (as vLLM-Omni
sessions do), else the probe's default. The response must also be reported ended
early -- ``response.done`` with ``status: cancelled`` (GA: reason
``turn_detected``) -- and no audio of it may follow that report.

An endpoint that sends audio in chunks longer than the probe's lead (MiniCPM-o's
are 1000 ms) may have sent every delta it will send before the probe spoke,
while that audio still plays. Then no delta can stop late, and what stops the
client's playback is the endpoint's report: latency is the time from the speech
onset to that ``response.done``.

Verdict: ``pass`` when all three hold; ``fail`` when the audio ran on (to its end,
or past the limit, or after the cancel) or the response was never reported
cancelled; ``error`` when the scenario could not be set up.
"""

from __future__ import annotations

from typing import Any

from proxy.probe.context import ProbeContext
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.scenarios import OverlapTrace, overlap_once, overlap_trace

NAME = "barge_in"


def _limit(trace: OverlapTrace, default_ms: int) -> tuple[float, str]:
    caps = trace.capabilities or {}
    target = caps.get("target_barge_in_latency_ms")
    if isinstance(target, int | float) and not isinstance(target, bool) and target > 0:
        return float(target), "declared target"
    return float(default_ms), "probe default"


def analyse(trace: OverlapTrace, default_limit_ms: int) -> CheckResult:
    result = _judge(trace, default_limit_ms)
    track = trace.response
    if track is not None and trace.error is None:
        # For the report's plot: the answer's audio, as it arrived, around the speech onset.
        result.series = {
            "audio": [[round((t - trace.onset_t) * 1000), ms] for t, ms in track.audio_log],
            "limit_ms": result.data.get("limit_ms"),
            "latency_ms": result.data.get("latency_ms"),
        }
    return result


def _judge(trace: OverlapTrace, default_limit_ms: int) -> CheckResult:
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
    by_report = latency < 0
    if by_report:
        playing = track.playing_until()
        if playing is None or playing <= trace.onset_t:
            return CheckResult(
                NAME,
                "error",
                f"the answer ({track.audio_ms:.0f} ms of audio) ended before the probe spoke "
                "over it",
                data,
                notes,
            )
        # Its last delta came before the onset and still played: the report stops it,
        # or the audio runs out first (an endpoint that held the rest back at once).
        reported = track.done_t if track.done_t is not None else trace.observed_until
        ran_out = playing < reported
        latency = max(0.0, (min(playing, reported) - trace.onset_t) * 1000.0)
        data["latency_ms"] = round(latency)
        data["stopped_by"] = "audio ran out" if ran_out else "response.done"
        notes.append(
            f"every delta ({track.max_delta_ms:.0f} ms long at most) came before the speech "
            + (
                "onset and no more came; latency is the time to the end of that audio"
                if ran_out
                else "onset; latency is the time to the response's report"
            )
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
    stopped = (
        f"no audio after speech onset; reported {track.status} {latency:.0f} ms after it"
        if by_report and data["stopped_by"] == "response.done"
        else f"audio stopped {latency:.0f} ms after speech onset"
    )
    return passed(
        NAME,
        f"{stopped} (limit {limit:.0f} ms, {source}); response {track.status}{why}",
        data,
        notes,
    )


async def run(ctx: ProbeContext) -> CheckResult:
    result = analyse(await overlap_trace(ctx), ctx.settings.barge_in_limit_ms)
    if ctx.settings.barge_in_trials <= 1 or result.verdict == "error":
        return result
    # More trials, each on a fresh session, for a distribution rather than one number.
    trials = [result]
    for _ in range(ctx.settings.barge_in_trials - 1):
        trials.append(analyse(await overlap_once(ctx), ctx.settings.barge_in_limit_ms))
    return combine(trials)


def combine(trials: list[CheckResult]) -> CheckResult:
    """The first trial's result, failed if any trial failed, with every trial's latency."""
    first = trials[0]
    latencies = [t.data["latency_ms"] for t in trials if "latency_ms" in t.data]
    first.series["trials_ms"] = latencies
    spread = ""
    if latencies:
        ordered = sorted(latencies)
        spread = (
            f"{len(trials)} trials: median {ordered[len(ordered) // 2]} ms, max {ordered[-1]} ms"
        )
    bad = [(i + 1, t) for i, t in enumerate(trials) if t.verdict != "pass"]
    if not bad:
        first.summary += f"; {spread}" if spread else ""
        return first
    if first.verdict == "pass":
        index, trial = bad[0]
        first.verdict = trial.verdict
        first.summary = f"trial {index} of {len(trials)}: {trial.summary}"
    if spread:
        first.notes.append(spread)
    return first
