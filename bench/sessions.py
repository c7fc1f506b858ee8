"""Sessions per core: ramp concurrent real-speech sessions in each mode until the proxy
falls behind.

    uv run python bench/sessions.py --json                       # every mode, 1 worker
    uv run python bench/sessions.py --modes duplex_emulated --workers 1,2 --json
    uv run python bench/sessions.py --smoke --json               # does it work (CI)

Real processes on loopback: a reference backend per mode (``turn`` for
``duplex_emulated``, ``duplex-no-barge-in`` for ``barge_in_emulated``, ``duplex`` for
``passthrough``), ``duplex-proxy serve --workers N`` in front of it (a ``redis-server``
store when N > 1) and, in this process, clients streaming the dev corpus's speech at
real-time pace (``bench/session_load.py``), sent and read by a lean client
(``bench/session_wire.py``; ``--client aiohttp --client-loop asyncio``: one aiohttp
socket and task per session, the load generator before 2026-12-03, ~2.5x the CPU).
Sessions are added in steps; each step is measured over ``--window`` seconds after
``--settle``. A step is sustained while the p99 VAD decision lag stays within 100 ms
and the p99 event delay within 50 ms (``bench/session_load.py`` says how both are
taken). Reported per mode: the highest sustained count, per worker, the proxy's CPU ms
per session-second and RSS per session at that step, and the CPU of an idle session
(opened, then silent). Each step also gives the machine's speed through its window
(``bench/speedometer.py``: this machine's moves within seconds) and its CPU scaled to one
speed (``cpu_ms_per_session_s_at_ref_speed``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import uvloop
from proc_stats import load_average
from processes import ROOT, stop_all
from session_load import Clips
from session_wire import WireClips
from sessions_ramp import ramp
from sessions_stack import start_stack

MODES = {
    "duplex_emulated": "turn",
    "barge_in_emulated": "duplex-no-barge-in",
    "passthrough": "duplex",
}
CORPUS = ROOT.parent / "shared" / "corpus" / "dev"  # found like bench/bargein.py finds it


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
        "--store",
        choices=("auto", "redis"),
        default="auto",
        help="the proxy's store (auto: in memory for 1 worker, Redis for more)",
    )
    parser.add_argument(
        "--client",
        choices=("lean", "aiohttp"),
        default="lean",
        help="the load generator: bench/session_wire.py, or one aiohttp socket and task per"
        " session (bench/session_load.py)",
    )
    parser.add_argument(
        "--client-loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="the load generator's event loop (before 2026-12-03: asyncio)",
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
    args.wire = WireClips.frame(clips, args.chunk_ms) if args.client == "lean" else None
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
                        args.store == "redis",
                    )
                    try:
                        run = uvloop.run if args.client_loop == "uvloop" else asyncio.run
                        redis = procs[0].pid if len(procs) > 2 else None  # [redis,] backend, proxy
                        result = run(
                            ramp(
                                base, procs[-1].pid, procs[-2].pid, mode, steps, args, clips, redis
                            )
                        )
                    finally:
                        stop_all(procs)
                    store = "redis" if workers > 1 or args.store == "redis" else "memory"
                    results.append(
                        {
                            "workers": workers,
                            "store": store,
                            "event_loop": loop,
                            "client": args.client,
                            "client_loop": args.client_loop,
                            **result,
                        }
                    )
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
            f" ({s['cpu_ms_per_session_s']} ms/session-s, at the reference speed"
            f" {s['cpu_ms_per_session_s_at_ref_speed']}), backend {s['backend_cpu_pct']} %,"
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
