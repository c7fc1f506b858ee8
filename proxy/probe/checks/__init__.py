"""The checks, one module each: ``async def run(ctx) -> CheckResult``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from proxy.probe.checks import (
    backpressure,
    barge_in,
    capacity,
    declared,
    dedup,
    fairness,
    full_duplex_input,
    gpu_memory,
    resume,
    truncation,
)
from proxy.probe.context import ProbeContext
from proxy.probe.result import CHECK_NAMES, CheckResult

CheckFn = Callable[[ProbeContext], Awaitable[CheckResult]]

CHECKS: dict[str, CheckFn] = {
    declared.NAME: declared.run,
    full_duplex_input.NAME: full_duplex_input.run,
    barge_in.NAME: barge_in.run,
    truncation.NAME: truncation.run,
    resume.NAME: resume.run,
    dedup.NAME: dedup.run,
    backpressure.NAME: backpressure.run,
    fairness.NAME: fairness.run,
    capacity.NAME: capacity.run,
    gpu_memory.NAME: gpu_memory.run,
}
assert tuple(CHECKS) == CHECK_NAMES
