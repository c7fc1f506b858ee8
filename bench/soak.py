"""Soak: many sessions for a long time, with faults, on two replicas and one Redis.

    uv run python bench/soak.py                      # 24 sessions, 10 minutes
    uv run python bench/soak.py --smoke --json       # 30 s
    uv run python bench/soak.py --sessions 24 --seconds 300 --json

Everything runs for real on loopback: a ``redis-server`` (append-only file, so a
restart keeps the sessions, as a production Redis does), the reference backends
(``turn`` and ``duplex-no-barge-in``) and two proxy replicas (``python -m proxy
serve``) sharing the Redis store. N clients talk for the whole run: each streams a
speech clip from the dev corpus at real-time pace, waits for the answer, acks, and
goes again. Faults, at random:

* per turn: the client cuts its connection in the middle of the answer and resumes
  on a random replica; or floods the session with appends (hundreds of 20 ms frames
  at once); or stops reading for a few seconds (a slow reader; the proxy may drop it,
  and then it resumes);
* in the background: a reference backend is killed (SIGKILL) and restarted on its
  port; Redis is restarted (SIGTERM, then started again on its port).

Reported, per replica, sampled over time from ``/proc``: RSS and open file
descriptors, and from ``/metrics`` the ``duplex_proxy_sessions_active`` and
``duplex_proxy_asyncio_tasks`` gauges, with the growth after the
warm-up (the first fifth of the run). Per session, by ``server_event_seq`` across
every resume (as bench/resume.py checks): events lost, duplicated, out of order.
Targets: RSS and fds flat after warm-up, 0 lost, 0 duplicated. Every process started
here is stopped on the way out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from processes import ROOT, read_clip
from soak_client import Client
from soak_counts import Faults, Outcome
from soak_report import render, summarize
from soak_sampling import Samples, sample_loop
from soak_stack import KINDS, Stack, fault_loop, stack

CORPUS = ROOT.parent / "shared/corpus/dev"


async def run_all(
    stk: Stack, n: int, seconds: float, seed: int, sample_s: float, fault_s: float
) -> dict[str, Any]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    files = [
        c["file"] for c in manifest["clips"] if c["kind"] == "speech" and "_clean" in c["file"]
    ]
    clips = [read_clip(CORPUS / f) for f in files]
    rng = random.Random(seed)
    t0 = time.monotonic()
    deadline = t0 + seconds
    samples, faults = Samples(), Faults()
    clients = [
        Client(i, KINDS[i % len(KINDS)], stk.bases, clips[i % len(clips)], random.Random(seed + i))
        for i in range(n)
    ]
    sampler = asyncio.create_task(sample_loop(stk, samples, sample_s, t0))
    faulter = asyncio.create_task(fault_loop(stk, faults, rng, fault_s, t0))

    async def one(c: Client) -> Outcome:
        c.t0 = t0
        await asyncio.sleep(3.0 * c.idx / n)  # arrive over 3 s
        return await c.run(deadline)

    try:
        outs = await asyncio.gather(*(one(c) for c in clients))
    finally:
        faulter.cancel()
        await asyncio.gather(faulter, return_exceptions=True)
    # Let the replicas settle (disconnect grace) before the last sample.
    await asyncio.sleep(min(5.0, sample_s))
    sampler.cancel()
    await asyncio.gather(sampler, return_exceptions=True)
    return summarize(list(outs), faults, clients, samples, stk, seconds, time.monotonic() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=None, help="run time (default 600)")
    ap.add_argument("--smoke", action="store_true", help="a short run (30 s unless --seconds)")
    ap.add_argument("--reply-ms", type=int, default=1500, help="length of each spoken reply")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample-s", type=float, default=None, help="sampling period (default 10)")
    ap.add_argument(
        "--fault-s", type=float, default=None, help="mean time between upstream/Redis faults"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--logs", type=Path, default=None, help="keep each replica's info log in this folder"
    )
    args = ap.parse_args()
    seconds = args.seconds if args.seconds is not None else (30.0 if args.smoke else 600.0)
    sample_s = args.sample_s or (2.0 if args.smoke or seconds < 120 else 10.0)
    fault_s = args.fault_s or (max(5.0, seconds / 4) if args.smoke else 40.0)
    if args.sessions < 1 or seconds <= 0:
        ap.error("--sessions must be >= 1 and --seconds > 0")
    workdir = Path(tempfile.mkdtemp(prefix="dxp-bench-soak-"))
    try:
        with stack(args.reply_ms, workdir, args.logs) as stk:
            summary = asyncio.run(
                run_all(stk, args.sessions, seconds, args.seed, sample_s, fault_s)
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary["config"] = {
        "sessions": args.sessions,
        "seconds": seconds,
        "reply_ms": args.reply_ms,
        "seed": args.seed,
        "sample_s": sample_s,
        "fault_s": fault_s,
        "replicas": 2,
        "kinds": list(KINDS),
    }
    print(json.dumps(summary) if args.json else render(summary))
    ok = summary["lost"] == summary["duplicated"] == 0 and summary["clients_failed"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
