"""CPU cost of idle sessions: N sessions open and silent, the proxy's CPU over a window.

    uv run python bench/idle_cost.py                       # 90 idle sessions per mode
    uv run python bench/idle_cost.py --sessions 200 --window 20 --json
    uv run python bench/idle_cost.py --root OTHER_CHECKOUT # the same, another version
    uv run python bench/idle_cost.py --redis               # sessions kept in Redis

Starts a reference backend and a proxy (``duplex-proxy serve``) as processes, opens
``--sessions`` sessions that get ``session.created`` and then send nothing, waits
``--settle`` seconds, and reads the proxy's user+system CPU time from
``/proc/PID/stat`` across ``--window`` seconds, next to the same window with no
session open. An idle session should cost about nothing: no timer ticking.
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

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.processes import BACKEND_MAX_SESSIONS, QUIET, free_port, start_redis, stop_all, wait_port

MODES = {"duplex_emulated": "turn", "barge_in_emulated": "duplex-no-barge-in"}


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


async def cpu_over(pid: int, window_s: float) -> float:
    start, t0 = cpu_s(pid), time.monotonic()
    await asyncio.sleep(window_s)
    return (cpu_s(pid) - start) / (time.monotonic() - t0)


async def measure(url: str, pid: int, n: int, settle_s: float, window_s: float) -> dict[str, float]:
    empty = await cpu_over(pid, window_s)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        sockets = await asyncio.gather(*(http.ws_connect(url) for _ in range(n)))
        for ws in sockets:
            msg = await ws.receive(timeout=60)
            assert json.loads(msg.data)["type"] == "session.created", msg.data
        await asyncio.sleep(settle_s)
        busy = await cpu_over(pid, window_s)
        await asyncio.gather(*(ws.close() for ws in sockets))
    per_session_ms = (busy - empty) / n * 1000 if n else 0.0
    return {
        "cpu_no_sessions_pct": round(empty * 100, 2),
        "cpu_idle_sessions_pct": round(busy * 100, 2),
        "cpu_ms_per_session_s": round(per_session_ms, 3),
    }


def run_mode(root: Path, kind: str, args: argparse.Namespace) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    env["PYTHONPATH"] = str(root)
    py = [sys.executable, "-m", "proxy"]
    up_port, port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []
    store = ""
    try:
        if args.redis:  # each session's lease checks then go to Redis
            redis, url = start_redis()
            procs.append(redis)
            store = f'[store]\nurl = "{url}"\n'
        argv = ["reference-backend", "--mode", kind, "--port", str(up_port)]
        argv += ["--max-sessions", str(BACKEND_MAX_SESSIONS)]
        procs.append(
            subprocess.Popen([*py, *argv, "--log-level", "warning"], cwd=root, env=env, **QUIET)
        )
        wait_port(up_port, procs[-1], 30, "reference backend")
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(
                '[server]\nhost = "127.0.0.1"\nlog_level = "warning"\n[auth]\nmode = "none"\n'
                + store
                + '\n[[routes]]\nmodel = "m"\n'
                + f'upstream = "ws://127.0.0.1:{up_port}/v1/realtime"\n'
            )
        argv = ["serve", "--config", f.name, "--port", str(port), "--workers", "1"]
        procs.append(subprocess.Popen([*py, *argv], cwd=root, env=env, **QUIET))
        wait_port(port, procs[-1], 60, "proxy")
        url = f"ws://127.0.0.1:{port}/v1/realtime?model=m"
        return asyncio.run(measure(url, procs[-1].pid, args.sessions, args.settle, args.window))
    finally:
        stop_all(procs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=90)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds before measuring")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--redis", action="store_true", help="a redis-server as the store")
    args = parser.parse_args()
    for mode, kind in MODES.items():
        row = {"mode": mode, "sessions": args.sessions, **run_mode(args.root, kind, args)}
        if args.json:
            print(json.dumps(row))
        else:
            print(
                f"{mode:18} {args.sessions:4} idle sessions: proxy CPU "
                f"{row['cpu_idle_sessions_pct']:6.2f} % (none open: "
                f"{row['cpu_no_sessions_pct']:.2f} %), "
                f"{row['cpu_ms_per_session_s']:.3f} ms CPU per session-second"
            )


if __name__ == "__main__":
    main()
