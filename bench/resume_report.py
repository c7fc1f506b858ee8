"""The resume bench's figures: events lost, duplicated, out of order; client events
applied once, twice, never; resume latency; the audio at the seams and the answers
spoken over, summed over the sessions (``bench/resume.py``), and the text table."""

from __future__ import annotations

from typing import Any

from resume_checks import audio_seams, overlap_odd, overlap_violations, overlaps
from resume_records import Outcome


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 1)


def summarize(outs: list[Outcome], elapsed: float) -> dict[str, Any]:
    lat = [ms for o in outs for ms in o.resume_ms]
    lat_other = [ms for o in outs for ms in o.resume_ms_other]
    sent = sum(o.updates_sent for o in outs)
    once = sum(1 for o in outs for n in o.applied.values() if n == 1)
    twice = sum(1 for o in outs for n in o.applied.values() if n > 1)
    never = sum(o.updates_sent - len(o.applied) for o in outs)
    return {
        "sessions": len(outs),
        "overlap_sessions": sum(1 for o in outs if o.overlaps),
        "sessions_failed": sum(1 for o in outs if o.error),
        "turns": sum(o.turns for o in outs),
        "disconnects": sum(o.disconnects for o in outs),
        "resumes": sum(o.resumes for o in outs),
        "resumes_other_replica": sum(o.resumes_other for o in outs),
        "aborted_drops": sum(o.aborts for o in outs),
        "resumes_after_abort": sum(o.resumes_after_abort for o in outs),
        "resumes_retried": sum(o.resumes_retried for o in outs),
        "resumes_token_given": sum(o.resumes_token_given for o in outs),
        "server_events": sum(o.events for o in outs),
        "audio_deltas": sum(o.audio_deltas for o in outs),
        "lost": sum(o.lost for o in outs),
        "duplicated": sum(o.duplicated for o in outs),
        "out_of_order": sum(o.out_of_order for o in outs),
        "conflicting": sum(o.conflicting for o in outs),
        "client_events": {
            "checked_sessions": len(outs),
            "sent": sent,
            "resent": sum(o.updates_resent for o in outs),
            "applied_once": once,
            "applied_twice": twice,
            "never_applied": never,
        },
        "resume_ms": {
            "p50": pct(lat, 0.5),
            "p99": pct(lat, 0.99),
            "max": round(max(lat), 1) if lat else None,
            "other_replica_p50": pct(lat_other, 0.5),
            "other_replica_p99": pct(lat_other, 0.99),
        },
        "slowest_resumes": sorted((x for o in outs for x in o.slow), key=lambda x: -float(x["ms"]))[
            :5
        ],
        "audio_at_the_seam": audio_seams(outs),
        "spoken_over": overlaps(outs),
        "spoken_over_failures": overlap_violations(outs),
        "spoken_over_unlike_unmoved": overlap_odd(outs),
        "elapsed_s": round(elapsed, 1),
        "errors": [f"{o.kind}: {o.error}" for o in outs if o.error][:10],
    }


def render(s: dict[str, Any]) -> str:
    c, r = s["client_events"], s["resume_ms"]
    return "\n".join(
        [
            "| sessions | disconnects | resumes (other replica) | lost | duplicated "
            "| out of order | client events once/twice/never | resume p50 / p99 ms |",
            "|---|---|---|---|---|---|---|---|",
            f"| {s['sessions']} ({s['sessions_failed']} failed) | {s['disconnects']} "
            f"| {s['resumes']} ({s['resumes_other_replica']}) | {s['lost']} | {s['duplicated']} "
            f"| {s['out_of_order']} | {c['applied_once']}/{c['applied_twice']}/"
            f"{c['never_applied']} of {c['sent']} | {r['p50']} / {r['p99']} |",
            f"\n{s['server_events']} server events ({s['audio_deltas']} audio deltas), "
            f"{s['turns']} turns in {s['elapsed_s']} s",
        ]
    )
