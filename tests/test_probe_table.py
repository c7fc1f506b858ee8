"""The probe's terminal table and JSON, and the pure rules of the metrics-based checks."""

from __future__ import annotations

import itertools

import orjson
import pytest

from proxy.probe.checks import gpu_memory
from proxy.probe.metrics import AFTER, BEFORE, Sample, parse_prometheus, sample_from
from proxy.probe.report import VERDICT_WIDTH, display_width, render_table, to_json
from proxy.probe.result import CHECK_NAMES, VERDICTS, CheckResult, Verdict
from proxy.probe.runner import ProbeReport


def _report(turn: bool = False, *verdicts: Verdict) -> ProbeReport:
    report = ProbeReport("ws://x/v1/realtime", "m", CHECK_NAMES)
    report.endpoint = {"dialect": "turn" if turn else "realtime", "proxy_mode": "passthrough"}
    chosen = verdicts or ("pass",) * len(CHECK_NAMES)
    for name, verdict in zip(CHECK_NAMES, chosen, strict=True):
        report.results.append(CheckResult(name, verdict, f"{name} said so", {"n": 1}))
    return report


def _verdicts(**over: Verdict) -> tuple[Verdict, ...]:
    return tuple(over.get(name, "pass") for name in CHECK_NAMES)


def test_exit_status_needs_every_required_check_and_a_duplex_endpoint() -> None:
    assert _report().exit_code == 0
    failing = _report(False, *_verdicts(barge_in="fail", resume="unsupported", dedup="error"))
    assert failing.exit_code == 1 and failing.failing == ["barge_in", "dedup"]
    assert failing.not_applicable == ["resume"]
    failing.required = ("declared", "fairness")
    assert failing.exit_code == 0
    turn = _report(True)
    turn.required = ("fairness",)
    assert turn.exit_code == 1, "a turn-based endpoint never exits 0"


def test_a_check_that_cannot_apply_fails_the_run_only_when_asked_for_by_name() -> None:
    # Nothing to amplify is no defect: the run passes and says what it could not check.
    report = _report(False, *_verdicts(backpressure="unsupported"))
    assert report.exit_code == 0 and report.failing == []
    assert report.not_applicable == ["backpressure"]
    assert "PASS: 9/10 required checks passed, backpressure unsupported" in render_table(
        report, colour=False, width=100
    )
    data = orjson.loads(to_json(report))
    assert data["exit_code"] == 0 and data["not_applicable"] == ["backpressure"]
    # --require / --checks named it: it had to pass.
    report.named = True
    assert report.exit_code == 1 and report.failing == ["backpressure"]
    assert report.not_applicable == []


def test_table_and_json() -> None:
    verdicts = _verdicts(barge_in="fail", resume="unsupported", backpressure="error")
    report = _report(False, *verdicts)
    report.named = True  # as with --require: the unsupported resume fails too
    plain = render_table(report, colour=False, width=100)
    assert "barge_in" in plain and "✗ fail" in plain and "\x1b[" not in plain
    assert (
        f"FAIL: {len(CHECK_NAMES) - 3}/{len(CHECK_NAMES)} required checks passed; "
        "not passing: barge_in, resume, backpressure"
    ) in plain
    coloured = render_table(report, colour=True, width=100)
    assert "\x1b[31m✗ fail" in coloured and "\x1b[32m✓ pass" in coloured
    data = orjson.loads(to_json(report))
    assert data["exit_code"] == 1 and data["failing"] == ["barge_in", "resume", "backpressure"]
    assert [c["name"] for c in data["checks"]] == list(CHECK_NAMES)
    assert set(data["checks"][0]) == {"name", "verdict", "summary", "data", "notes", "duration_ms"}


@pytest.mark.parametrize("verdict", VERDICTS)
def test_the_result_column_lines_up_whatever_the_verdicts(verdict: Verdict) -> None:
    # Every verdict against every other, in every row position.
    for others in itertools.product(VERDICTS, repeat=2):
        chosen = (verdict, *others, *(("pass",) * (len(CHECK_NAMES) - 3)))
        table = render_table(_report(False, *chosen), colour=False, width=120)
        starts = set()
        for line in table.splitlines():
            name = line.split(" ", 1)[0]
            if name in CHECK_NAMES:
                starts.add(display_width(line.split(f"{name} said so")[0]))
            elif name == "CHECK":
                starts.add(display_width(line.split("RESULT")[0]))
        assert len(starts) == 1, table
    assert VERDICT_WIDTH == display_width("- unsupported")


def test_a_check_that_read_a_shared_scenario_says_so_instead_of_a_zero_time() -> None:
    report = _report()
    barge_in = report.result("barge_in")
    barge_in.duration_ms = 0
    barge_in.shared_with = "full_duplex_input"
    table = render_table(report, colour=False, width=200)
    row = next(line for line in table.splitlines() if line.startswith("barge_in "))
    assert row.endswith("[measured in the full_duplex_input scenario]"), row


SCRAPE = """# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1"} 1000
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-2"} 500
DCGM_FI_DEV_FB_FREE{gpu="0"} 7000
DCGM_FI_DEV_FB_FREE{gpu="1"} 7500
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.5
vllm_omni:peak_memory_mb{model_name="m",stage="0"} 900
"""


def test_prometheus_scrape_sums_gpus_and_takes_the_fullest_engine() -> None:
    sample = sample_from(parse_prometheus(SCRAPE), 1.0, BEFORE)
    assert sample.memory_mb == 1500 and sample.total_mb == 16000
    assert sample.kv_usage == 0.5 and sample.source == "DCGM_FI_DEV_FB_USED"
    omni = sample_from(parse_prometheus('vllm_omni:peak_memory_mb{stage="1"} 700\n'), 1.0, "x")
    assert omni.memory_mb == 700 and omni.source == "vllm_omni:peak_memory_mb"
    legacy = sample_from(parse_prometheus("vllm:gpu_cache_usage_perc 0.3\n"), 1.0, "x")
    assert legacy.kv_usage == 0.3 and legacy.memory_mb is None


def _samples(*rows: tuple[str, float, float]) -> list[Sample]:
    return [
        Sample(float(i), phase, mb, 80_000.0, kv, "DCGM_FI_DEV_FB_USED")
        for i, (phase, mb, kv) in enumerate(rows)
    ]


def test_gpu_memory_rules() -> None:
    healthy = _samples(
        (BEFORE, 1000, 0.1), ("fairness", 2200, 0.5), ("capacity", 1900, 0.4), (AFTER, 1000, 0.1)
    )
    result = gpu_memory.analyse(healthy, [], "http://m/metrics", {"fairness": 4})
    assert result.verdict == "pass", result.summary
    assert result.data["growth_per_session_mb"] == 300.0 and result.data["kv_per_session"] == 0.1
    assert "+300 MiB per session (4 at once in fairness)" in result.summary
    leak = _samples((BEFORE, 1000, 0.1), ("fairness", 2200, 0.5), (AFTER, 2200, 0.1))
    leaked = gpu_memory.analyse(leak, [], "u", {"fairness": 4})
    assert leaked.verdict == "fail" and "did not give it back" in leaked.summary
    kv = _samples((BEFORE, 1000, 0.1), ("fairness", 1000, 0.97), (AFTER, 1000, 0.3))
    full = gpu_memory.analyse(kv, [], "u", {"fairness": 4})
    assert "KV cache 97% full" in full.summary and "still hold it" in full.summary
    assert gpu_memory.analyse([], ["ClientConnectorError: refused"], "u", {}).verdict == "error"
    blank = [Sample(0.0, BEFORE, None, None, None, None)]
    assert gpu_memory.analyse(blank, [], "u", {}).verdict == "unsupported"


def _trial(verdict: Verdict, latency: int) -> CheckResult:
    return CheckResult("barge_in", verdict, f"audio stopped {latency} ms", {"latency_ms": latency})


def test_barge_in_trials_fail_when_any_trial_fails() -> None:
    from proxy.probe.checks.barge_in import combine

    good = combine([_trial("pass", 100), _trial("pass", 300), _trial("pass", 200)])
    assert good.verdict == "pass" and good.series["trials_ms"] == [100, 300, 200]
    assert good.summary.endswith("; 3 trials: median 200 ms, max 300 ms")
    bad = combine([_trial("pass", 100), _trial("fail", 1500)])
    assert bad.verdict == "fail" and bad.summary == "trial 2 of 2: audio stopped 1500 ms"
    assert bad.notes == ["2 trials: median 1500 ms, max 1500 ms"]
