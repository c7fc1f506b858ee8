"""``bench/bargein.py`` compares its modes under the same load, and says when the proxy
waited for a CPU (docs/benchmarks.md, "Seconds behind on a busy machine")."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.servers import CORPUS, ROOT

sys.path.insert(0, str(ROOT / "bench"))

import bargein
import bargein_cases
import proc_stats


def test_the_modes_cases_are_taken_in_turn() -> None:
    cases = [bargein_cases.Case(m, "speech", f"c{i}", None, None) for m in "ab" for i in range(3)]
    cases.append(bargein_cases.Case("c", "speech", "c0", None, None))
    order = [(c.mode, c.name) for c in bargein_cases.interleaved(cases)]
    # Each mode's cases in their order, the modes in turn: at any concurrency every mode
    # runs beside the others through the whole run, not in its own part of it.
    assert order == [
        *(("a", "c0"), ("b", "c0"), ("c", "c0")),
        *(("a", "c1"), ("b", "c1")),
        *(("a", "c2"), ("b", "c2")),
    ]


@pytest.mark.skipif(not CORPUS.exists(), reason="the dev corpus is not there")
def test_the_bench_runs_both_modes_in_turn() -> None:
    cases = bargein_cases.interleaved(bargein_cases.build_cases(CORPUS, list(bargein.MODES)))
    modes = [c.mode for c in cases]
    assert modes[:4] == ["duplex_emulated", "barge_in_emulated"] * 2
    assert sorted(modes) == sorted(c.mode for c in bargein_cases.build_cases(CORPUS, modes[:2]))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="no /proc (Linux only)")
def test_the_proxys_scheduling_is_read_and_a_starved_case_counted() -> None:
    sum(range(200_000))  # this process has run
    ran, waited = proc_stats.scheduled_ns(os.getpid())
    assert ran > 0 and waited >= 0
    assert proc_stats.scheduled_ns(2**22 + 1) == (0, 0)  # gone: nothing, no error
    case = bargein_cases.Case("m", "speech", "c", None, None)
    # Ran or waited for a CPU 45 % and 93 % of each second: idle a good part of the one,
    # hardly ever idle in the other (its sessions fell behind).
    kept_up = bargein.Outcome(case, proxy_ran_ms_s=300.0, proxy_waited_ms_s=150.0)
    starved = bargein.Outcome(case, proxy_ran_ms_s=340.0, proxy_waited_ms_s=590.0)
    unknown = bargein.Outcome(case)
    assert (kept_up.starved, starved.starved, unknown.starved) == (False, True, False)
