"""How fast this machine runs a fixed piece of work, sampled through a benchmark's window.

A shared machine's speed moves: on the 2-core machine the benchmarks run on, the same
work (600 rounds of the unit below) took between 2.7 and 6.5 ms of CPU within 30 seconds
of an otherwise idle machine (docs/benchmarks.md, "The machine's speed moves within
seconds"), so a CPU figure alone says as much about the machine's moment as about the
code. The speedometer is a child process that, every ``interval_s``, does one unit of
work shaped like the proxy's (small numpy calls on a 512-sample window and a little
interpreter work) and reports the CPU it took; a window's median unit time puts a CPU
figure beside the speed it was measured at.
It costs the machine one unit per interval (about 1.5 % of one core at the defaults, in
blocks of 1-2 ms).

    uv run python bench/speedometer.py --seconds 30     # the units, one per line
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import numpy as np

# The unit's CPU ms when this machine was at its faster speed (1.04-1.15 ms, 2026-12-04;
# the slower one took ~1.5x). Only a scale for the ``*_at_ref_speed`` figures: compare
# those within one machine, never across machines.
REF_UNIT_MS = 1.1
# How the proxy's CPU follows the unit's: in two runs of 12 and 16 windows of 30
# `duplex_emulated` sessions the log-log slope was 0.79 and 0.56 (the proxy slows less
# than the unit; part of its time is the kernel's and onnxruntime's), so a figure is
# scaled by (REF_UNIT_MS / unit) ** 0.7 (docs/benchmarks.md, "The machine's speed moves
# within seconds").
ELASTICITY = 0.7
UNIT_ROUNDS = 200


def unit(x: np.ndarray, rounds: int = UNIT_ROUNDS) -> float:
    acc = 0.0
    for i in range(rounds):
        y = x * 0.5 + 1.0
        acc += float(np.dot(y, x))
        acc += len(str({"type": "input_audio_buffer.append", "n": i}))
    return acc


def measure(seconds: float, interval_s: float) -> None:
    """The child's loop: ``MONOTONIC_S UNIT_MS`` per line until ``seconds`` have passed."""
    x = np.random.default_rng(1).standard_normal(512).astype(np.float32)
    unit(x, 200)  # warm
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.process_time()
        unit(x)
        ms = (time.process_time() - t0) * 1000
        print(f"{time.monotonic():.3f} {ms:.3f}", flush=True)
        time.sleep(interval_s)


class Speedometer:
    """The child process, run beside a benchmark; ``median_ms(t0, t1)`` over any window of
    ``time.monotonic()`` it has covered."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self.interval_s = interval_s
        self.samples: list[tuple[float, float]] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._reading: asyncio.Task[None] | None = None

    async def start(self, seconds: float = 24 * 3600) -> None:
        argv = [__file__, "--seconds", str(seconds), "--interval", str(self.interval_s)]
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, *argv, stdout=asyncio.subprocess.PIPE
        )
        self._reading = asyncio.create_task(self._read())

    async def __aenter__(self) -> Speedometer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        async for line in self._proc.stdout:
            t, ms = line.split()
            self.samples.append((float(t), float(ms)))

    async def stop(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.terminate()
            await self._proc.wait()
        if self._reading is not None:
            await asyncio.gather(self._reading, return_exceptions=True)

    def between(self, t0: float, t1: float) -> list[float]:
        """The unit times sampled within ``[t0, t1]`` of ``time.monotonic()``."""
        return [ms for t, ms in self.samples if t0 <= t <= t1]

    def median_ms(self, t0: float, t1: float) -> float | None:
        inside = self.between(t0, t1)
        return round(statistics.median(inside), 3) if inside else None

    def window(self, t0: float, t1: float) -> dict[str, float | None]:
        """The window's median unit time, and the machine's speed against the reference."""
        ms = self.median_ms(t0, t1)
        return {
            "machine_unit_ms_p50": ms,
            "machine_speed": round(REF_UNIT_MS / ms, 2) if ms else None,
        }


def at_ref_speed(value: float | None, unit_ms: float | None, digits: int = 2) -> float | None:
    """A CPU figure measured while the unit took ``unit_ms``, scaled to the reference speed."""
    if value is None or not unit_ms:
        return None
    return round(value * (REF_UNIT_MS / unit_ms) ** ELASTICITY, digits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.1)
    args = parser.parse_args()
    measure(args.seconds, args.interval)


if __name__ == "__main__":
    main()
