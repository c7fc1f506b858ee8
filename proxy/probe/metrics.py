"""Reading a model server's Prometheus endpoint while the probe loads it.

The series the ``gpu_memory`` check understands, as their exporters name them:

* ``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE`` (NVIDIA's DCGM exporter): frame
  buffer used / free per GPU, in MiB; summed over the GPUs.
* ``vllm_omni:peak_memory_mb{model_name, stage}`` (vLLM-Omni,
  ``vllm_omni/metrics/definitions.py``): peak GPU memory a stage saw during its
  generation, in MB; the largest stage is taken. A peak, so it never comes back down.
* ``vllm:kv_cache_usage_perc`` (vLLM; ``vllm:gpu_cache_usage_perc`` before it was
  renamed): KV-cache usage as a fraction, 1 meaning full; the fullest engine is taken.

A ``MetricsSampler`` scrapes every ``interval_s`` in the background and labels each
sample with the check running at the time, so the check can tell the load's phases
apart (before any check, during each, after the last).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
OMNI_PEAK = "vllm_omni:peak_memory_mb"
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
#: Phase label of the samples taken before the first check and after the last.
BEFORE = "before"
AFTER = "after"

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_prometheus(text: str) -> dict[str, list[float]]:
    """Every sample's value by metric name (labels dropped; ``# HELP``/``# TYPE`` skipped)."""
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match is None:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        out.setdefault(match.group(1), []).append(value)
    return out


@dataclass(frozen=True, slots=True)
class Sample:
    t: float
    phase: str
    #: GPU memory in use, MiB (DCGM frame buffer, else vLLM-Omni's stage peak).
    memory_mb: float | None
    #: GPU memory in total, MiB (DCGM used + free), when the exporter says.
    total_mb: float | None
    kv_usage: float | None
    #: Which series ``memory_mb`` came from.
    source: str | None


def sample_from(values: dict[str, list[float]], t: float, phase: str) -> Sample:
    memory: float | None = None
    total: float | None = None
    source: str | None = None
    if values.get(FB_USED):
        memory, source = sum(values[FB_USED]), FB_USED
        if values.get(FB_FREE):
            total = memory + sum(values[FB_FREE])
    elif values.get(OMNI_PEAK):
        memory, source = max(values[OMNI_PEAK]), OMNI_PEAK
    kv = next((max(values[name]) for name in KV_USAGE if values.get(name)), None)
    return Sample(t, phase, memory, total, kv, source)


@dataclass(slots=True)
class MetricsSampler:
    http: aiohttp.ClientSession
    url: str
    phase: Callable[[], str]
    interval_s: float = 0.25
    samples: list[Sample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    async def scrape(self, phase: str | None = None) -> Sample | None:
        loop = asyncio.get_running_loop()
        try:
            async with self.http.get(self.url, timeout=aiohttp.ClientTimeout(total=2.0)) as resp:
                if resp.status != 200:
                    self.errors.append(f"HTTP {resp.status}")
                    return None
                text = await resp.text()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return None
        sample = sample_from(parse_prometheus(text), loop.time(), phase or self.phase())
        self.samples.append(sample)
        return sample

    async def start(self, baseline_samples: int = 3) -> None:
        """Take the baseline (nothing of the probe's open yet), then sample in the background."""
        for _ in range(baseline_samples):
            await self.scrape(BEFORE)
            await asyncio.sleep(self.interval_s)
        self._task = asyncio.create_task(self._run(), name="probe-metrics")

    async def _run(self) -> None:
        while True:
            await self.scrape()
            await asyncio.sleep(self.interval_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def settle(self, within_s: float, done: Callable[[list[Sample]], bool]) -> None:
        """Sample the after-load phase until ``done(after_samples)`` or ``within_s``."""
        await self.stop()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while True:
            await self.scrape(AFTER)
            after = [s for s in self.samples if s.phase == AFTER]
            if (len(after) >= 2 and done(after)) or loop.time() >= deadline:
                return
            await asyncio.sleep(self.interval_s)
