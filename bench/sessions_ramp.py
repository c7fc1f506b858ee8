"""One mode's ramp in ``bench/sessions.py``: the idle cost first, then sessions added
step by step, each step measured over its window (the proxy's CPU and RSS, its VAD lag,
the clients' event delays) and judged sustained or behind, and the mode's summary."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
from proc_stats import (
    cpu_seconds,
    idle_figures,
    load_average,
    machine_cpu_seconds,
    rss_mb,
    scheduled_ns,
    scrub_paths,
    tree,
)
from processes import QUIET, ROOT
from session_load import PROBES, Clips, Observations, run_client
from session_wire import Ticker, run_lean
from sessions_metrics import bucket_p99_ms, proxy_counts
from speedometer import Speedometer, at_ref_speed

VAD_LAG_LIMIT_MS = 100
# A session ticks for 5 s after its last input (proxy/emulated/ticker.py, MIN_KEEP_MS):
# idle is measured after that.
IDLE_SETTLE_S = 7.0
EVENT_DELAY_LIMIT_MS = 50


async def ramp(
    base: str,
    pid: int,
    backend: int,
    mode: str,
    steps: list[int],
    args: argparse.Namespace,
    clips: Clips,
    store: int | None = None,
) -> dict[str, Any]:
    url = base.replace("http", "ws", 1) + "/v1/realtime?model=m"
    probe = PROBES["passthrough" if mode == "passthrough" else "emulated"]
    obs, stop = Observations(), asyncio.Event()
    rows: list[dict[str, Any]] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with Speedometer() as speed, aiohttp.ClientSession(connector=connector) as http:
        pids = tree(pid)
        idle = await idle_cost(http, url, pids, args, clips)
        ticker = Ticker(args.chunk_ms)
        ticking = asyncio.create_task(ticker.run(stop))
        rss0 = rss_mb(pids)  # after the idle sessions: what they left allocated is reused
        clients: list[asyncio.Task[None]] = []
        for count in steps:
            for i in range(len(clients), count):
                if args.wire is not None:
                    client = run_lean(ticker, url, args.wire, i, obs, stop, probe)
                else:
                    client = run_client(http, url, clips, i, obs, stop, probe, args.chunk_ms)
                clients.append(asyncio.create_task(client))
                await asyncio.sleep(1.0 / max(1, count - len(clients) + 1) if i % 5 == 4 else 0)
            await asyncio.sleep(args.settle)
            pids = tree(pid)
            hist0 = await proxy_counts(http, base)
            t0, cpu0, me0 = time.perf_counter(), cpu_seconds(pids), time.process_time()
            m0 = time.monotonic()
            up0, st0, each0 = (
                cpu_seconds([backend]),
                cpu_seconds([store] if store else []),
                per_pid(pids),
            )
            box0, wait0 = machine_cpu_seconds(), sum(scheduled_ns(p)[1] for p in pids)
            if args.profile and count == steps[-1]:
                await profile(pids, args.window, profile_path(args.profile, mode))
            else:
                await asyncio.sleep(args.window)
            t1, cpu1, me1 = time.perf_counter(), cpu_seconds(pids), time.process_time()
            m1 = time.monotonic()
            up1, st1, each1 = (
                cpu_seconds([backend]),
                cpu_seconds([store] if store else []),
                per_pid(pids),
            )
            box1, wait1 = machine_cpu_seconds(), sum(scheduled_ns(p)[1] for p in pids)
            hist1 = await proxy_counts(http, base)
            cpu = cpu1 - cpu0
            per_session = (1000 * cpu / (t1 - t0) - 10 * idle["cpu_pct_no_sessions"]) / count
            machine = speed.window(m0, m1)
            rows.append(
                {
                    "sessions": count,
                    "opened": obs.opened,
                    "errors": len(obs.errors),
                    "proxy_cpu_pct": round(100 * cpu / (t1 - t0), 1),
                    # Above what the proxy costs with no session at all.
                    "cpu_ms_per_session_s": round(per_session, 2),
                    # The machine's speed through the window (bench/speedometer.py).
                    **machine,
                    "cpu_ms_per_session_s_at_ref_speed": at_ref_speed(
                        per_session, machine["machine_unit_ms_p50"]
                    ),
                    "rss_mb": round(rss_mb(pids), 1),
                    "rss_mb_per_session": round((rss_mb(pids) - rss0) / count, 3),
                    "client_cpu_pct": round(100 * (me1 - me0) / (t1 - t0), 1),
                    "load_average": load_average(),
                    "window": (t0, t1),
                    "proxy_vad_lag_p99_ms": bucket_p99_ms(hist0, hist1),
                    # CPU per second of audio the proxy actually read: still the cost
                    # when a starved proxy reads less than real time.
                    "cpu_ms_per_audio_s": round(
                        1000
                        * cpu
                        / max(1.0, (hist1["frames_in"] - hist0["frames_in"]))
                        / (args.chunk_ms / 1000),
                        2,
                    ),
                    "mode_has_vad": mode != "passthrough",
                    # Silero's windows per session-second (31.25 with no quiet gate).
                    "vad_rows_per_session_s": round(
                        (hist1["vad_rows"] - hist0["vad_rows"]) / (t1 - t0) / count, 2
                    ),
                    "backend_cpu_pct": round(100 * (up1 - up0) / (t1 - t0), 1),
                    "store_cpu_pct": round(100 * (st1 - st0) / (t1 - t0), 1) if store else None,
                    # Each process of the proxy (its workers, and the parent if there are several).
                    "proxy_cpu_pct_each": sorted(
                        (round(100 * (each1[p] - each0.get(p, 0.0)) / (t1 - t0), 1) for p in each1),
                        reverse=True,
                    ),
                    # The proxy's threads ready to run, waiting for a core (summed).
                    "proxy_runqueue_wait_pct": round((wait1 - wait0) / 1e7 / (t1 - t0), 1),
                    # Every core's busy time, and what of it was none of the bench's.
                    "machine_cpu_pct": round(100 * (box1 - box0) / (t1 - t0), 1),
                    "others_cpu_pct": round(
                        100
                        * ((box1 - box0) - cpu - (up1 - up0) - (st1 - st0) - (me1 - me0))
                        / (t1 - t0),
                        1,
                    ),
                }
            )
            if await judge(rows, obs, stop_early=not (args.smoke or args.all_steps)):
                break
        stop.set()
        await asyncio.gather(ticking, *clients, return_exceptions=True)
    return summarise(mode, rows, obs, idle, args)


def profile_path(prefix: str, mode: str) -> Path:
    """PREFIX-MODE.svg, or PREFIX-MODE.txt (collapsed stacks) for a PREFIX ending in .txt."""
    stem, suffix = (prefix[:-4], ".txt") if prefix.endswith(".txt") else (prefix, ".svg")
    return Path(f"{stem}-{mode}{suffix}")


async def profile(pids: list[int], seconds: float, out: Path) -> None:
    """A py-spy profile of the proxy (its workers) over the window: a flame graph, or
    collapsed stacks (for grep and sort) to a .txt path."""
    fmt = "raw" if out.suffix == ".txt" else "flamegraph"
    argv = ["py-spy", "record", "--format", fmt, "-o", str(out), "-r", "200"]
    argv += ["-d", str(int(seconds)), "--subprocesses", "--nonblocking", "-p", str(pids[0])]
    proc = await asyncio.create_subprocess_exec(*argv, **QUIET)
    await proc.wait()
    await asyncio.to_thread(scrub_paths, out, ROOT)


def per_pid(pids: list[int]) -> dict[int, float]:
    return {p: cpu_seconds([p]) for p in pids}


async def judge(rows: list[dict[str, Any]], obs: Observations, stop_early: bool) -> bool:
    """Fill in the delays of every step so far (the baseline may have improved); True
    once the last step is past a limit."""
    baseline = obs.baseline()
    for row in rows:
        row.update(obs.window(*row["window"], baseline))
        if not row["mode_has_vad"]:  # the upstream's own speech events: not the proxy's
            row["vad_lag_p50_ms"] = row["vad_lag_p99_ms"] = None
        # The proxy's own VAD lag (queued to decided) decides; the lag the clients
        # see on speech events is reported beside it (in barge_in_emulated those
        # events may be the upstream's own, and depend on its load too).
        lag, delay = row["proxy_vad_lag_p99_ms"], row["event_delay_p99_ms"]
        vad_ok = lag is not None and lag <= VAD_LAG_LIMIT_MS
        row["sustained"] = (
            row["opened"] >= row["sessions"]
            and (vad_ok or row["mode_has_vad"] is False)
            and (delay is not None and delay <= EVENT_DELAY_LIMIT_MS)
        )
    return stop_early and not rows[-1]["sustained"]


async def idle_cost(
    http: aiohttp.ClientSession, url: str, pids: list[int], args: argparse.Namespace, clips: Clips
) -> dict[str, Any]:
    """The proxy's CPU with ``--idle`` sessions open and silent, minus with none."""

    async def over(seconds: float) -> float:
        c0, t0 = cpu_seconds(pids), time.perf_counter()
        await asyncio.sleep(seconds)
        return (cpu_seconds(pids) - c0) / (time.perf_counter() - t0)

    none = await over(args.idle_window)
    rss0 = rss_mb(pids)
    obs, stop = Observations(), asyncio.Event()
    tasks = [
        asyncio.create_task(
            run_lean(Ticker(), url, args.wire, i, obs, stop, "", speak=False)
            if args.wire is not None
            else run_client(http, url, clips, i, obs, stop, "", speak=False)
        )
        for i in range(args.idle)
    ]
    # Polled: every client task adds to the counts.
    while obs.opened + len(obs.errors) < args.idle:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    await asyncio.sleep(IDLE_SETTLE_S if not args.smoke else 1.0)
    busy = await over(args.idle_window)
    rss1 = rss_mb(pids)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(1.0)  # let the closes settle before the ramp
    return idle_figures(none, busy, obs.opened, rss1 - rss0)


def summarise(
    mode: str,
    rows: list[dict[str, Any]],
    obs: Observations,
    idle: dict[str, Any],
    args: argparse.Namespace,
) -> dict[str, Any]:
    for row in rows:
        row.pop("window")
    ok = [r for r in rows if r["sustained"]]
    best = ok[-1] if ok else None
    return {
        "mode": mode,
        "sustained_sessions": best["sessions"] if best else 0,
        "sustained_sessions_per_worker": round(best["sessions"] / args.workers_now, 1)
        if best
        else 0,
        "cpu_ms_per_session_s": best["cpu_ms_per_session_s"] if best else None,
        "machine_speed": best["machine_speed"] if best else None,
        "cpu_ms_per_session_s_at_ref_speed": best["cpu_ms_per_session_s_at_ref_speed"]
        if best
        else None,
        "sessions_per_core_at_that_cpu": round(1000 / best["cpu_ms_per_session_s"])
        if best and best["cpu_ms_per_session_s"] > 0
        else None,
        "rss_mb_per_session": best["rss_mb_per_session"] if best else None,
        **idle,
        "errors_sample": obs.errors[:3],
        "steps": rows,
    }
