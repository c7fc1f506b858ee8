"""Relay cost: direct vs nginx vs duplex-proxy passthrough, side by side in one run.

N sessions each send one 20 ms audio event every 20 ms to an echo upstream
(`bench/echo_upstream.py`) that answers each with an audio delta carrying the same
payload. The round-trip time comes from the client's own send timestamp inside the
payload. The same load runs three ways:

* direct: client -> echo upstream;
* nginx: client -> Debian's nginx as a WebSocket reverse proxy (configured and started
  here on loopback) -> echo upstream;
* proxy_asyncio, proxy_uvloop: client -> `duplex-proxy serve --workers 1` on a route forced
  to `passthrough` -> echo upstream, once per event loop (`server.event_loop`).

The targets take turns (`--rounds`, default 4: each target's `--seconds` in four slices,
each round beginning one target further on), because this machine's speed moves within
seconds and a target measured in one stretch may get a different machine than the next.
Relay CPU is the relay process's own user+system time over its measured windows (from
`/proc`), per 1,000 event pairs (one client event and its echo); peak RSS is the
relay's `VmHWM`. `--speedometer` adds the machine's speed through each target's windows
(`bench/speedometer.py`).

    uv run python bench/relay.py --json                 # 50 sessions, 10 s each target, in 4 turns
    uv run python bench/relay.py --sessions 200 --json
    uv run python bench/relay.py --smoke --json         # does it work (CI)
    uv run python bench/relay.py --json --base OTHER_CHECKOUT [--base-last]
        # that checkout's proxy too (targets base_LOOP), side by side in the same run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from processes import QUIET, ROOT, free_port, stop_all, wait_port
from relay_load import load, pooled
from relay_targets import children, start_nginx, start_proxy, versions


def run(
    sessions: int,
    seconds: float,
    loops: list[str],
    profile: Path | None = None,
    base: Path | None = None,
    base_last: bool = False,
    native: bool = False,
    speedometer: bool = False,
    rounds: int = 4,
) -> dict[str, Any]:
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        try:
            up_port = free_port()
            echo_cmd = [sys.executable, str(ROOT / "bench" / "echo_upstream.py")]
            upstream = subprocess.Popen([*echo_cmd, "--port", str(up_port)], **QUIET)
            procs.append(upstream)
            wait_port(up_port, upstream, 20, "echo upstream")
            nginx, nginx_port = start_nginx(tmp, up_port)
            procs.append(nginx)
            query = "/v1/realtime?duplex=1&model=echo"
            targets: dict[str, tuple[str, list[int]]] = {
                "direct": (f"ws://127.0.0.1:{up_port}{query}", []),
                "nginx": (f"ws://127.0.0.1:{nginx_port}{query}", children(nginx.pid)),
            }
            for loop in loops:
                for name, root in versions(base, base_last):
                    proxy, proxy_port = start_proxy(tmp, up_port, loop, root)
                    procs.append(proxy)
                    url = f"ws://127.0.0.1:{proxy_port}{query}"
                    targets[f"{name}_{loop}"] = (url, [proxy.pid])
            # The targets take turns, a slice of the time each per round, each round
            # starting one target further on: the machine's speed moves within seconds
            # (docs/benchmarks.md), and turns give every target the same mix of it.
            names = list(targets)
            raw: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
            for r in range(rounds):
                for name in names[r % len(names) :] + names[: r % len(names)]:
                    url, pids = targets[name]
                    spied = None
                    if profile is not None and name.startswith(("proxy", "base")):
                        spied = profile.with_name(f"{profile.stem}-{name}{profile.suffix}")
                    one = load(url, sessions, seconds / rounds, pids, spied, native, speedometer)
                    raw[name].append(asyncio.run(one))
            results = {name: pooled(raw[name], bool(targets[name][1])) for name in names}
        finally:
            stop_all(procs)
    return summarise(results, sessions, seconds)


def summarise(results: dict[str, Any], sessions: int, seconds: float) -> dict[str, Any]:
    direct = results["direct"]
    relays = [name for name in results if name != "direct"]
    for name in relays:
        r = results[name]
        r["added_p50_ms"] = round(r["rtt_p50_ms"] - direct["rtt_p50_ms"], 2)
        r["added_p99_ms"] = round(r["rtt_p99_ms"] - direct["rtt_p99_ms"], 2)
    nginx = results["nginx"]

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a is not None and b else None

    return {
        "cores": os.cpu_count(),
        "load_average": [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]],
        "sessions": sessions,
        "seconds_per_target": seconds,
        "targets": results,
        "vs_nginx": {
            name: {
                "added_p99": ratio(results[name]["added_p99_ms"], nginx["added_p99_ms"]),
                "cpu_per_event": ratio(
                    results[name]["relay_cpu_s_per_1000_events"],
                    nginx["relay_cpu_s_per_1000_events"],
                ),
                # Each target's CPU scaled to the machine's reference speed through its own
                # windows (bench/speedometer.py): the ratio with the machine's moves taken out.
                "cpu_per_event_at_ref_speed": ratio(
                    results[name].get("relay_cpu_s_per_1000_events_at_ref_speed"),
                    nginx.get("relay_cpu_s_per_1000_events_at_ref_speed"),
                ),
            }
            for name in relays
            if name.startswith(("proxy", "base"))
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--smoke", action="store_true", help="2 sessions, 2 s: does it work")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--profile",
        type=Path,
        help="py-spy profile of the proxy: a flame graph (.svg), or collapsed stacks (.txt)",
    )
    parser.add_argument(
        "--native", action="store_true", help="--profile: py-spy's --native (C frames too)"
    )
    parser.add_argument(
        "--event-loops",
        default="asyncio,uvloop",
        help="the proxy once per server.event_loop, side by side",
    )
    parser.add_argument(
        "--base",
        type=Path,
        help="also run the proxy from this checkout (targets base_LOOP), before this one",
    )
    parser.add_argument(
        "--base-last", action="store_true", help="run --base's proxy after this checkout's"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="the targets take turns: each measured in this many slices of --seconds",
    )
    parser.add_argument(
        "--speedometer",
        action="store_true",
        help="sample the machine's speed through each target's windows (bench/speedometer.py;"
        " about 1.5 %% of a core, in 1-2 ms blocks that add to every target's p99)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.sessions, args.seconds, args.rounds = 2, 2.0, 2
    if args.profile is not None:
        args.rounds = 1  # one py-spy recording per target
    base = args.base.resolve() if args.base is not None else None
    loops = args.event_loops.split(",")
    out = run(
        args.sessions,
        args.seconds,
        loops,
        args.profile,
        base,
        args.base_last,
        args.native,
        args.speedometer,
        args.rounds,
    )
    if args.json:
        print(json.dumps(out))
        return
    print(f"{out['sessions']} sessions, {out['cores']} cores")
    print(f"{'target':13} {'p50 ms':>8} {'p99 ms':>8} {'CPU s/1k':>9} {'RSS MB':>7}")
    for name, r in out["targets"].items():
        cpu, rss = r["relay_cpu_s_per_1000_events"], r["relay_peak_rss_mb"]
        print(
            f"{name:13} {r['rtt_p50_ms']:8.2f} {r['rtt_p99_ms']:8.2f} "
            f"{'' if cpu is None else cpu:>9} {'' if rss is None else rss:>7}"
        )


if __name__ == "__main__":
    main()
