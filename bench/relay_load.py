"""``bench/relay.py``'s load on one target for one round: N paced sessions, one 20 ms audio
event every 20 ms each, round-trip times from the send timestamp each echo carries, and the
relay's CPU (``/proc``) and peak RSS over the window; and a target's figures pooled over
its rounds."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson
from proc_stats import scrub_paths
from processes import QUIET, ROOT
from speedometer import Speedometer, at_ref_speed

FRAME_MS = 20
# 20 ms of 24 kHz PCM16 mono, base64: the size of a real audio event.
AUDIO_B64 = "A" * 1280


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
    speedometer: bool = False,
) -> dict[str, Any]:
    """One round on one target: its raw figures (``pooled`` makes a target's figures of them)."""
    if not speedometer:
        return await _load(url, sessions, seconds, pids, None, profile, native)
    async with Speedometer() as speed:
        return await _load(url, sessions, seconds, pids, speed, profile, native)


async def _load(
    url: str,
    sessions: int,
    seconds: float,
    pids: list[int],
    speed: Speedometer | None,
    profile: Path | None,
    native: bool,
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
    cpu0, m0 = (cpu_seconds(pids) if pids else 0.0), time.monotonic()
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
    cpu1, m1 = (cpu_seconds(pids) if pids else 0.0), time.monotonic()
    user1 = cpu_seconds(pids, user_only=True) if pids else 0.0
    echoes = sum(await asyncio.gather(*tasks))
    units = speed.between(m0, m1) if speed is not None else []
    return {
        "rtts": rtts,
        "events": echoes,
        "expected_events": int(sessions * seconds * 1000 / FRAME_MS),
        "cpu_s": cpu1 - cpu0,
        "user_cpu_s": user1 - user0,
        "units": units,
        "peak_rss_mb": peak_rss_mb(pids) if pids else None,
    }


def pooled(rounds: list[dict[str, Any]], relay: bool) -> dict[str, Any]:
    """One target's figures over its rounds: the RTTs pooled, CPU summed over the events."""
    arr = np.asarray([x for r in rounds for x in r["rtts"]])
    echoes = sum(r["events"] for r in rounds)
    cpu, user = sum(r["cpu_s"] for r in rounds), sum(r["user_cpu_s"] for r in rounds)
    units = [ms for r in rounds for ms in r["units"]]
    unit_ms = round(statistics.median(units), 3) if units else None
    cpu_per_1000 = round(cpu / echoes * 1000, 4) if relay else None
    return {
        "rounds": len(rounds),
        "events": echoes,
        "expected_events": sum(r["expected_events"] for r in rounds),
        "rtt_p50_ms": round(float(np.percentile(arr, 50)), 2),
        "rtt_p99_ms": round(float(np.percentile(arr, 99)), 2),
        "relay_cpu_s_per_1000_events": cpu_per_1000,
        "relay_user_cpu_s_per_1000_events": round(user / echoes * 1000, 4) if relay else None,
        "relay_peak_rss_mb": round(rounds[-1]["peak_rss_mb"], 1) if relay else None,
        # With --speedometer: the machine's speed through the target's windows, and its CPU
        # at the reference speed (bench/speedometer.py).
        "machine_unit_ms_p50": unit_ms,
        "relay_cpu_s_per_1000_events_at_ref_speed": at_ref_speed(cpu_per_1000, unit_ms, 4),
    }
