"""Sessions per core: ramp concurrent real-speech sessions in each mode until the proxy
falls behind.

    uv run python bench/sessions.py --json                       # every mode, 1 worker
    uv run python bench/sessions.py --modes duplex_emulated --workers 1,2 --json
    uv run python bench/sessions.py --smoke --json               # does it work (CI)

Real processes on loopback: a reference backend per mode (``turn`` for
``duplex_emulated``, ``duplex-no-barge-in`` for ``barge_in_emulated``, ``duplex`` for
``passthrough``), ``duplex-proxy serve --workers N`` in front of it (a ``redis-server``
store when N > 1) and, in this process, clients streaming the dev corpus's speech at
real-time pace (``bench/session_load.py``). Sessions are added in steps; each step is
measured over ``--window`` seconds after ``--settle``. A step is sustained while the
p99 VAD decision lag stays within 100 ms and the p99 event delay within 50 ms
(``bench/session_load.py`` says how both are taken). Reported per mode: the highest
sustained count, per worker, the proxy's CPU ms per session-second and RSS per session
at that step, and the CPU of an idle session (opened, then silent).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from proc_stats import cpu_seconds, idle_figures, load_average, rss_mb, scrub_paths, tree
from processes import (
    BACKEND_MAX_SESSIONS,
    QUIET,
    ROOT,
    free_port,
    start_redis,
    stop_all,
    wait_port,
)
from session_load import PROBES, Clips, Observations, run_client

MODES = {
    "duplex_emulated": "turn",
    "barge_in_emulated": "duplex-no-barge-in",
    "passthrough": "duplex",
}
VAD_LAG_LIMIT_MS = 100
# A session ticks for 5 s after its last input (proxy/emulated/ticker.py, MIN_KEEP_MS):
# idle is measured after that.
IDLE_SETTLE_S = 7.0
EVENT_DELAY_LIMIT_MS = 50
CORPUS = ROOT.parent / "shared" / "corpus" / "dev"  # found like bench/bargein.py finds it


def start_stack(
    kind: str,
    workers: int,
    tmp: Path,
    env: dict[str, str],
    loop: str,
    root: Path = ROOT,
    gather_ms: float | None = None,
    quiet_dbfs: float | None = None,
    inline_rows: int | None = None,
) -> tuple[list[subprocess.Popen[bytes]], str]:
    """Redis (for N > 1 workers), the reference backend and the proxy; the proxy runs
    from ``root`` (another checkout, to compare versions side by side)."""
    procs: list[subprocess.Popen[bytes]] = []
    store = ""
    if workers > 1:
        redis, url = start_redis()
        procs.append(redis)
        store = f'[store]\nurl = "{url}"\n'
    up_port = free_port()
    argv = ["reference-backend", "--mode", kind, "--port", str(up_port), "--reply-ms", "1000"]
    argv += ["--max-sessions", str(BACKEND_MAX_SESSIONS)]
    procs.append(
        subprocess.Popen(
            [sys.executable, "-m", "proxy", *argv, "--log-level", "warning"],
            cwd=ROOT,
            env=env,
            **QUIET,
        )
    )
    wait_port(up_port, procs[-1], 30, "reference backend")
    conf = tmp / f"proxy-{kind}-{workers}.toml"
    vad = {"gather_ms": gather_ms, "quiet_gate_dbfs": quiet_dbfs, "inline_rows": inline_rows}
    vad_lines = "".join(f"{k} = {v}\n" for k, v in vad.items() if v is not None)
    conf.write_text(
        '[server]\nmax_sessions = 5000\nlog_level = "warning"\n'
        # (a checkout from before server.event_loop runs asyncio and knows no such key)
        + (f'event_loop = "{loop}"\n' if root == ROOT or loop != "asyncio" else "")
        + '[auth]\nmode = "none"\n'
        + (f"[vad]\n{vad_lines}" if vad_lines else "")
        + f'{store}[[routes]]\nmodel = "m"\nupstream = "ws://127.0.0.1:{up_port}/v1/realtime"\n'
        "max_sessions = 5000\n"
    )
    port = free_port()
    argv = ["serve", "--config", str(conf), "--host", "127.0.0.1", "--port", str(port)]
    if workers > 1:  # (1 is the default with the in-memory store, in every version)
        argv += ["--workers", str(workers)]
    penv = {**env, "PYTHONPATH": str(root)}
    procs.append(
        subprocess.Popen([sys.executable, "-m", "proxy", *argv], cwd=root, env=penv, **QUIET)
    )
    wait_port(port, procs[-1], 60, "proxy")
    return procs, f"http://127.0.0.1:{port}"


async def proxy_counts(http: aiohttp.ClientSession, base: str) -> dict[float | str, float]:
    """From the proxy's /metrics: its VAD decision-lag histogram (cumulative bucket
    counts by bound), under "frames_in" the client frames it has read, under
    "vad_rows" the windows Silero ran (not those the quiet gate answered)."""
    async with http.get(base + "/metrics") as resp:
        text = await resp.text()
    out: dict[float | str, float] = {"frames_in": 0.0, "vad_rows": 0.0}
    for line in text.splitlines():
        if line.startswith("duplex_proxy_vad_decision_lag_seconds_bucket{"):
            le = float(line.split('le="', 1)[1].split('"', 1)[0])
            out[le] = out.get(le, 0.0) + float(line.rsplit(" ", 1)[1])
        elif line.startswith('duplex_proxy_frames_total{direction="client_to_upstream"}'):
            out["frames_in"] += float(line.rsplit(" ", 1)[1])
        elif line.startswith("duplex_proxy_vad_batch_windows_sum"):
            out["vad_rows"] += float(line.rsplit(" ", 1)[1])
    return out


def bucket_p99_ms(
    before: dict[float | str, float], after: dict[float | str, float]
) -> float | None:
    """The p99 of what was observed in between, interpolated inside its bucket (the
    histogram's buckets include 0.1 s, the limit); beyond the last bucket, None."""
    bounds = sorted(le for le in after if isinstance(le, float))
    counts = [after[le] - before.get(le, 0.0) for le in bounds]
    total = counts[-1] if counts else 0.0
    if total <= 0:
        return None
    want, lo, below = 0.99 * total, 0.0, 0.0
    for le, n in zip(bounds, counts, strict=True):
        if n >= want:
            if le == float("inf"):
                return None
            share = (want - below) / (n - below) if n > below else 1.0
            return round((lo + share * (le - lo)) * 1000, 1)
        lo, below = le, n
    return None


async def ramp(
    base: str,
    pid: int,
    backend: int,
    mode: str,
    steps: list[int],
    args: argparse.Namespace,
    clips: Clips,
) -> dict[str, Any]:
    url = base.replace("http", "ws", 1) + "/v1/realtime?model=m"
    probe = PROBES["passthrough" if mode == "passthrough" else "emulated"]
    obs, stop = Observations(), asyncio.Event()
    rows: list[dict[str, Any]] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        pids = tree(pid)
        idle = await idle_cost(http, url, pids, args, clips)
        rss0 = rss_mb(pids)  # after the idle sessions: what they left allocated is reused
        clients: list[asyncio.Task[None]] = []
        for count in steps:
            for i in range(len(clients), count):
                clients.append(
                    asyncio.create_task(
                        run_client(http, url, clips, i, obs, stop, probe, args.chunk_ms)
                    )
                )
                await asyncio.sleep(1.0 / max(1, count - len(clients) + 1) if i % 5 == 4 else 0)
            await asyncio.sleep(args.settle)
            pids = tree(pid)
            hist0 = await proxy_counts(http, base)
            t0, cpu0, me0 = time.perf_counter(), cpu_seconds(pids), time.process_time()
            up0 = cpu_seconds([backend])
            if args.profile and count == steps[-1]:
                await profile(pids, args.window, profile_path(args.profile, mode))
            else:
                await asyncio.sleep(args.window)
            t1, cpu1, me1 = time.perf_counter(), cpu_seconds(pids), time.process_time()
            up1 = cpu_seconds([backend])
            hist1 = await proxy_counts(http, base)
            cpu = cpu1 - cpu0
            rows.append(
                {
                    "sessions": count,
                    "opened": obs.opened,
                    "errors": len(obs.errors),
                    "proxy_cpu_pct": round(100 * cpu / (t1 - t0), 1),
                    # Above what the proxy costs with no session at all.
                    "cpu_ms_per_session_s": round(
                        (1000 * cpu / (t1 - t0) - 10 * idle["cpu_pct_no_sessions"]) / count, 2
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
                }
            )
            if await judge(rows, obs, stop_early=not (args.smoke or args.all_steps)):
                break
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
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
        asyncio.create_task(run_client(http, url, clips, i, obs, stop, "", speak=False))
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
        "sessions_per_core_at_that_cpu": round(1000 / best["cpu_ms_per_session_s"])
        if best and best["cpu_ms_per_session_s"] > 0
        else None,
        "rss_mb_per_session": best["rss_mb_per_session"] if best else None,
        **idle,
        "errors_sample": obs.errors[:3],
        "steps": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--workers", default="1", help="comma-separated worker counts")
    parser.add_argument("--steps", default="10,20,40,60,80,100,120,150,180,220,260")
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--window", type=float, default=8.0)
    parser.add_argument("--idle", type=int, default=200, help="idle sessions for the idle cost")
    parser.add_argument("--idle-window", type=float, default=10.0)
    parser.add_argument("--chunk-ms", type=int, default=20)
    parser.add_argument(
        "--event-loops", default="uvloop", help="comma-separated server.event_loop values"
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="run the proxy from this checkout instead"
    )
    parser.add_argument("--gather-ms", type=float, help="the proxy's [vad] gather_ms")
    parser.add_argument(
        "--quiet-gate-dbfs", type=float, help="the proxy's [vad] quiet_gate_dbfs (unset: off)"
    )
    parser.add_argument(
        "--vad-inline-rows", type=int, help="the proxy's [vad] inline_rows (unset: its default)"
    )
    parser.add_argument(
        "--all-steps", action="store_true", help="measure every step, even once behind"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="2 sessions, short windows: does it work"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="py-spy flame graph of the last step: PREFIX-MODE.svg (PREFIX.txt: collapsed stacks)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.settle, args.window = "2", 2.0, 3.0
        args.idle, args.idle_window = 2, 1.0
    steps = [int(s) for s in args.steps.split(",")]
    clips = Clips.load(args.corpus, args.chunk_ms)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in [int(w) for w in args.workers.split(",")]:
            args.workers_now = workers
            for mode in args.modes.split(","):
                for loop in args.event_loops.split(","):
                    procs, base = start_stack(
                        MODES[mode],
                        workers,
                        Path(tmp),
                        env,
                        loop,
                        args.root.resolve(),
                        args.gather_ms,
                        args.quiet_gate_dbfs,
                        args.vad_inline_rows,
                    )
                    try:
                        result = asyncio.run(
                            ramp(base, procs[-1].pid, procs[-2].pid, mode, steps, args, clips)
                        )
                    finally:
                        stop_all(procs)
                    results.append({"workers": workers, "event_loop": loop, **result})
                    if not args.json:
                        print_row(results[-1])
    out = {
        "cores": os.cpu_count(),
        "command": " ".join(sys.argv),
        "load_average_end": load_average(),
        "results": results,
    }
    if args.json:
        print(json.dumps(out))


def print_row(r: dict[str, Any]) -> None:
    for s in r["steps"]:
        print(
            f"{r['mode']:18} w{r['workers']} {r['event_loop']:7} {s['sessions']:4} sessions:"
            f" proxy {s['proxy_cpu_pct']:5.1f} %"
            f" ({s['cpu_ms_per_session_s']} ms/session-s), backend {s['backend_cpu_pct']} %,"
            f" VAD lag p99 {s['proxy_vad_lag_p99_ms']} ms (clients see {s['vad_lag_p99_ms']}),"
            f" event delay p99 {s['event_delay_p99_ms']} ms, load {s['load_average'][0]}"
            f"{'' if s['sustained'] else '  <- behind'}",
            flush=True,
        )
    print(
        f"{r['mode']:18} w{r['workers']} {r['event_loop']:7} sustained {r['sustained_sessions']},"
        " idle"
        f" {r['cpu_ms_per_idle_session_s']} ms/s per session,"
        f" RSS {r['rss_mb_per_session']} MB/session",
        flush=True,
    )


if __name__ == "__main__":
    main()
