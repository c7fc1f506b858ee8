"""The soak's replicas sampled over time: RSS and open fds from ``/proc``, and the
``duplex_proxy_sessions_active`` and ``duplex_proxy_asyncio_tasks`` gauges from
``/metrics``."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from soak_stack import Stack


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def fd_count(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


async def gauges(http: aiohttp.ClientSession, base: str) -> tuple[float | None, float | None]:
    """Sessions active and asyncio tasks alive, off the replica's ``/metrics``."""
    url = base.replace("ws://", "http://").replace("/v1/realtime", "/metrics")
    try:
        async with http.get(url, timeout=aiohttp.ClientTimeout(total=3)) as resp:
            text = await resp.text()
    except (aiohttp.ClientError, TimeoutError):
        return None, None
    active, tasks = 0.0, None
    for line in text.splitlines():
        if line.startswith("duplex_proxy_sessions_active{"):
            active += float(line.rsplit(" ", 1)[1])
        elif line.startswith("duplex_proxy_asyncio_tasks "):
            tasks = float(line.rsplit(" ", 1)[1])
    return active, tasks


@dataclass
class Samples:
    t: list[float] = field(default_factory=list)
    rss: list[list[float | None]] = field(default_factory=list)  # per replica
    fds: list[list[int | None]] = field(default_factory=list)
    active: list[list[float | None]] = field(default_factory=list)
    tasks: list[list[float | None]] = field(default_factory=list)


async def sample_loop(stk: Stack, samples: Samples, every_s: float, t0: float) -> None:
    n = len(stk.replicas)
    samples.rss = [[] for _ in range(n)]
    samples.fds = [[] for _ in range(n)]
    samples.active = [[] for _ in range(n)]
    samples.tasks = [[] for _ in range(n)]
    async with aiohttp.ClientSession() as http:
        while True:
            samples.t.append(round(time.monotonic() - t0, 1))
            for i, proc in enumerate(stk.replicas):
                samples.rss[i].append(rss_mb(proc.pid))
                samples.fds[i].append(fd_count(proc.pid))
                active, tasks = await gauges(http, stk.bases[i])
                samples.active[i].append(active)
                samples.tasks[i].append(tasks)
            await asyncio.sleep(every_s)
