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

Relay CPU is the relay process's own user+system time over the measured window (from
`/proc`), per 1,000 event pairs (one client event and its echo); peak RSS is the
relay's `VmHWM`.

    uv run python bench/relay.py --json                 # 50 sessions, 10 s each target
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
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson
from proc_stats import scrub_paths
from processes import QUIET, ROOT, free_port, stop_all, wait_port

FRAME_MS = 20
# 20 ms of 24 kHz PCM16 mono, base64: the size of a real audio event.
AUDIO_B64 = "A" * 1280
NGINX_CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream echo {{ server 127.0.0.1:{upstream}; keepalive 64; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://echo;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_read_timeout 3600s;
      proxy_buffering off;
    }}
  }}
}}
"""


def cpu_seconds(pids: list[int], user_only: bool = False) -> float:
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        # utime (+ stime: the system calls, on loopback the receiver's TCP work too)
        total += int(fields[11]) + (0 if user_only else int(fields[12]))
    return total / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pids: list[int]) -> float:
    kb = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                kb += int(line.split()[1])
    return kb / 1024


def children(pid: int) -> list[int]:
    """``pid`` and its direct children (nginx's master and its workers)."""
    found = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


async def one_session(
    url: str, start_at: float, stop_at: float, warm_until: float, rtts: list[float]
) -> int:
    """Run one paced session; returns the number of echoes received in the window."""
    got = 0
    async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as ws:
        created = await ws.receive_json(timeout=30)
        assert created["type"] == "session.created", created

        async def reader() -> None:
            nonlocal got
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                event = orjson.loads(msg.data)
                if event.get("type") == "response.output_audio.delta":
                    now = time.perf_counter()
                    if warm_until <= event["t"] < stop_at:
                        rtts.append((now - event["t"]) * 1000)
                        got += 1

        read = asyncio.create_task(reader())
        k = 0
        while True:
            due = start_at + k * FRAME_MS / 1000
            if due >= stop_at:
                break
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            now = time.perf_counter()
            await ws.send_str(
                f'{{"type":"input_audio_buffer.append","t":{now!r},"audio":"{AUDIO_B64}"}}'
            )
            k += 1
        await asyncio.sleep(0.3)  # let the last echoes arrive
        read.cancel()
    return got


async def load(
    url: str,
    sessions: int,
    seconds: float,
    pids: list[int],
    profile: Path | None = None,
    native: bool = False,
) -> dict[str, Any]:
    rtts: list[float] = []
    begin = time.perf_counter() + 2.0  # every session connected before anyone sends
    warm_until = begin + 1.0
    stop_at = warm_until + seconds
    offsets = np.linspace(0, FRAME_MS / 1000, sessions, endpoint=False)
    tasks = [
        asyncio.create_task(one_session(url, begin + float(o), stop_at, warm_until, rtts))
        for o in offsets
    ]
    await asyncio.sleep(max(0.0, warm_until - time.perf_counter()))
    cpu0 = cpu_seconds(pids) if pids else 0.0
    user0 = cpu_seconds(pids, user_only=True) if pids else 0.0
    if profile is not None:  # py-spy samples the relay over the window (a dev dependency)
        # A .txt path gets py-spy's collapsed stacks (for grep and sort), else an SVG.
        fmt = "raw" if profile.suffix == ".txt" else "flamegraph"
        argv = ["py-spy", "record", "--format", fmt, "-o", str(profile), "-r", "200"]
        argv += ["-d", str(int(seconds)), "-p", str(pids[0])]
        # C frames need the process paused per sample (py-spy refuses --nonblocking then).
        argv += ["--native"] if native else ["--nonblocking"]
        spy = await asyncio.create_subprocess_exec(*argv, **QUIET)
    await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
    if profile is not None:
        await spy.wait()
        await asyncio.to_thread(scrub_paths, profile, ROOT)
    cpu1 = cpu_seconds(pids) if pids else 0.0
    user1 = cpu_seconds(pids, user_only=True) if pids else 0.0
    echoes = sum(await asyncio.gather(*tasks))
    arr = np.asarray(rtts)
    return {
        "events": echoes,
        "expected_events": int(sessions * seconds * 1000 / FRAME_MS),
        "rtt_p50_ms": round(float(np.percentile(arr, 50)), 2),
        "rtt_p99_ms": round(float(np.percentile(arr, 99)), 2),
        "relay_cpu_s_per_1000_events": round((cpu1 - cpu0) / echoes * 1000, 4) if pids else None,
        "relay_user_cpu_s_per_1000_events": (
            round((user1 - user0) / echoes * 1000, 4) if pids else None
        ),
        "relay_peak_rss_mb": round(peak_rss_mb(pids), 1) if pids else None,
    }


def start_nginx(tmp: Path, upstream_port: int) -> tuple[subprocess.Popen[bytes], int]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir(exist_ok=True)
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, upstream=upstream_port, port=port))
    proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(tmp)], **QUIET)
    wait_port(port, proc, 10, "nginx")
    return proc, port


def start_proxy(
    tmp: Path, upstream_port: int, loop: str, root: Path = ROOT
) -> tuple[subprocess.Popen[bytes], int]:
    """The proxy, run from ``root`` (another checkout, to compare versions side by side)."""
    port = free_port()
    conf = tmp / f"proxy-{loop}-{abs(hash(root))}.toml"
    conf.write_text(
        '[server]\nmax_sessions = 2000\nlog_level = "warning"\n'
        f'event_loop = "{loop}"\n[auth]\nmode = "none"\n'
        f'[[routes]]\nmodel = "echo"\nupstream = "ws://127.0.0.1:{upstream_port}/v1/realtime"\n'
        'mode = "passthrough"\nmax_sessions = 2000\n'
    )
    argv = ["serve", "--config", str(conf), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--workers", "1"]  # one process, as nginx runs one worker here
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "proxy", *argv], cwd=root, env=env, **QUIET)
    wait_port(port, proc, 30, "proxy")
    return proc, port


def run(
    sessions: int,
    seconds: float,
    loops: list[str],
    profile: Path | None = None,
    base: Path | None = None,
    base_last: bool = False,
    native: bool = False,
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
            results = {
                name: asyncio.run(
                    load(
                        url,
                        sessions,
                        seconds,
                        pids,
                        profile.with_name(f"{profile.stem}-{name}{profile.suffix}")
                        if profile is not None and name.startswith(("proxy", "base"))
                        else None,
                        native,
                    )
                )
                for name, (url, pids) in targets.items()
            }
        finally:
            stop_all(procs)
    return summarise(results, sessions, seconds)


def versions(base: Path | None, base_last: bool) -> list[tuple[str, Path]]:
    """The proxy's versions to run in order: this checkout, and ``base`` when given
    (first, or last: alternate the order across runs, as the machine's load drifts)."""
    if base is None:
        return [("proxy", ROOT)]
    both = [("base", base), ("proxy", ROOT)]
    return both[::-1] if base_last else both


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
    args = parser.parse_args()
    if args.smoke:
        args.sessions, args.seconds = 2, 2.0
    base = args.base.resolve() if args.base is not None else None
    loops = args.event_loops.split(",")
    out = run(args.sessions, args.seconds, loops, args.profile, base, args.base_last, args.native)
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
