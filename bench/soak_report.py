"""The soak's figures: growth after warm-up per replica, event checks and faults summed
over the clients, as one JSON-ready dict, and its text rendering."""

from __future__ import annotations

from typing import Any

from soak_client import Client
from soak_counts import Faults, Outcome
from soak_sampling import Samples
from soak_stack import Stack


def growth(series: list[Any], warm: int) -> float | None:
    """Last value minus the first value after warm-up (None when not measured)."""
    values = [v for v in series[warm:] if v is not None]
    return round(values[-1] - values[0], 1) if len(values) >= 2 else None


def slope_per_min(t: list[float], series: list[Any], warm: int) -> float | None:
    """Least-squares slope after warm-up, per minute."""
    pts = [(x, y) for x, y in zip(t[warm:], series[warm:], strict=True) if y is not None]
    if len(pts) < 3:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(60 * sum((x - mx) * (y - my) for x, y in pts) / den, 2) if den else None


def summarize(
    outs: list[Outcome],
    faults: Faults,
    clients: list[Client],
    samples: Samples,
    stk: Stack,
    seconds: float,
    elapsed: float,
) -> dict[str, Any]:
    warm = next((i for i, t in enumerate(samples.t) if t >= seconds / 5), len(samples.t))
    replicas = []
    for i, proc in enumerate(stk.replicas):
        rss, fds, tasks = samples.rss[i], samples.fds[i], samples.tasks[i]
        replicas.append(
            {
                "pid": proc.pid,
                "alive": proc.poll() is None,
                "rss_mb": [[t, v] for t, v in zip(samples.t, rss, strict=True)],
                "fds": [[t, v] for t, v in zip(samples.t, fds, strict=True)],
                "sessions_active": [
                    [t, v] for t, v in zip(samples.t, samples.active[i], strict=True)
                ],
                "tasks": [[t, v] for t, v in zip(samples.t, samples.tasks[i], strict=True)],
                "tasks_after_warmup": tasks[warm] if warm < len(tasks) else None,
                "tasks_end": tasks[-1] if tasks else None,
                "task_growth_after_warmup": growth(tasks, warm),
                "rss_mb_after_warmup": rss[warm] if warm < len(rss) else None,
                "rss_mb_end": rss[-1] if rss else None,
                "rss_growth_mb_after_warmup": growth(rss, warm),
                "rss_slope_mb_per_min_after_warmup": slope_per_min(samples.t, rss, warm),
                "fds_after_warmup": fds[warm] if warm < len(fds) else None,
                "fds_end": fds[-1] if fds else None,
                "fd_growth_after_warmup": growth(fds, warm),
            }
        )
    for c in clients:
        for name in ("client_cuts", "floods", "slow_readers", "dropped_by_proxy"):
            setattr(faults, name, getattr(faults, name) + getattr(c.faults, name))
    responses: dict[str, int] = {}
    drops: dict[str, int] = {}
    for o in outs:
        for status, n in o.responses.items():
            responses[status] = responses.get(status, 0) + n
        for why, n in o.drops.items():
            drops[why] = drops.get(why, 0) + n
    return {
        "clients": len(outs),
        "clients_failed": sum(1 for o in outs if o.error),
        "sessions_opened": sum(o.sessions for o in outs),
        "turns": sum(o.turns for o in outs),
        "stalled_turns": sum(o.stalled_turns for o in outs),
        "responses": responses,
        "resumes": sum(o.resumes for o in outs),
        "resume_failures": sum(len(o.resume_failures) for o in outs),
        "resume_hangs": sum(o.resume_hangs for o in outs),
        "resume_hangs_at": [h for o in outs for h in o.hang_at][:10],
        "not_resumable": sum(o.not_resumable for o in outs),
        "reopen_retries": sum(o.reopen_retries for o in outs),
        "connections_ended_by_proxy": drops,
        "server_events": sum(o.events for o in outs),
        "lost": sum(o.lost for o in outs),
        "duplicated": sum(o.duplicated for o in outs),
        "out_of_order": sum(o.out_of_order for o in outs),
        "per_session": [
            {"kind": o.kind, "events": o.events, "lost": o.lost, "duplicated": o.duplicated}
            for o in outs
        ],
        "faults": {
            **vars(faults),
            "upstream_restarts": {k: b.restarts for k, b in stk.backends.items()},
            "redis_restarts_done": stk.redis.restarts,
        },
        "warmup_s": samples.t[warm] if warm < len(samples.t) else None,
        "replicas": replicas,
        "elapsed_s": round(elapsed, 1),
        "errors": [f"{o.kind}: {o.error}" for o in outs if o.error][:10],
        "resume_failure_samples": [f for o in outs for f in o.resume_failures][:5],
    }


def render(s: dict[str, Any]) -> str:
    lines = [
        f"{s['clients']} clients ({s['clients_failed']} failed), {s['sessions_opened']} sessions,"
        f" {s['turns']} turns ({s['stalled_turns']} stalled) in {s['elapsed_s']} s",
        f"responses {s['responses']}; resumes {s['resumes']} ({s['resume_failures']} refused,"
        f" {s['resume_hangs']} unanswered)",
        f"connections ended by the proxy: {s['connections_ended_by_proxy']}",
        f"server events {s['server_events']}: lost {s['lost']}, duplicated {s['duplicated']},"
        f" out of order {s['out_of_order']}",
        f"faults {s['faults']}",
        "",
        "| replica | RSS MB after warm-up -> end (slope MB/min) | fds after warm-up -> end"
        " | tasks after warm-up -> end |",
        "|---|---|---|---|",
    ]
    for i, r in enumerate(s["replicas"]):
        lines.append(
            f"| {i} | {r['rss_mb_after_warmup']} -> {r['rss_mb_end']}"
            f" ({r['rss_slope_mb_per_min_after_warmup']}) | {r['fds_after_warmup']}"
            f" -> {r['fds_end']} | {r['tasks_after_warmup']} -> {r['tasks_end']} |"
        )
    return "\n".join(lines)
