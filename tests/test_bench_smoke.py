"""The benchmarks run (smoke mode): each prints one JSON object with the figures it promises.

Only that they work is checked here; their figures belong in docs/benchmarks.md (headlines in
the README), never in a test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus import needs_corpus

ROOT = Path(__file__).resolve().parents[1]


def run_bench(name: str, *args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        check=True,
    )
    result = json.loads(out.stdout)
    assert isinstance(result, dict)
    return result


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
    reason="nginx is not installed (.ci/run installs it)",
)
def test_relay_bench_compares_direct_nginx_and_the_proxy() -> None:
    result = run_bench("relay.py", "--smoke", "--json", "--speedometer")
    targets = result["targets"]
    assert isinstance(targets, dict)
    assert set(targets) == {"direct", "nginx", "proxy_asyncio", "proxy_uvloop"}
    for name, figures in targets.items():
        # Every echo came back through each relay: the relay path really carried the load.
        assert figures["events"] > 0.9 * figures["expected_events"], name
        assert figures["rtt_p99_ms"] >= figures["rtt_p50_ms"] > 0, name
        assert figures["rounds"] == 2, name  # the targets took turns
    for relay in ("nginx", "proxy_asyncio", "proxy_uvloop"):
        assert targets[relay]["relay_cpu_s_per_1000_events"] is not None
        assert targets[relay]["relay_peak_rss_mb"] > 0
        # The machine's speed through its windows (--speedometer), and the CPU scaled to
        # it (0 can happen: 2 sessions for 2 s may be under one clock tick of nginx's CPU).
        assert targets[relay]["machine_unit_ms_p50"] > 0, relay
        assert targets[relay]["relay_cpu_s_per_1000_events_at_ref_speed"] is not None, relay
    vs_nginx = result["vs_nginx"]
    assert isinstance(vs_nginx, dict)
    for relay in ("proxy_asyncio", "proxy_uvloop"):
        assert "cpu_per_event_at_ref_speed" in vs_nginx[relay], relay


def test_frame_cost_bench_times_this_checkout_beside_another() -> None:
    result = run_bench("frame_cost.py", "--smoke", "--json", "--root", str(ROOT))
    for name in ("this", "root"):
        times = result[name]
        assert isinstance(times, dict)
        assert set(times) == {
            *("up_path_us", "down_path_us"),
            *("take_us", "parse_us", "allowance_us", "told_us"),
        }
        assert all(isinstance(v, float) and v > 0 for v in times.values())


@pytest.mark.slow
def test_bargein_bench_runs_a_ga_client_and_plots_a_sweep(tmp_path: Path) -> None:
    plot = tmp_path / "sweep.png"
    result = run_bench(
        "bargein.py",
        *("--only", "backchannel00", "--modes", "duplex_emulated", "--sweep", "400,800"),
        *("--plot", str(plot), "--json"),
    )
    summary = result["summary"]
    assert isinstance(summary, dict)
    for decision in ("400", "800"):
        figures = summary["duplex_emulated"][decision]
        assert figures["classes"]["backchannel"]["cases"] == 1
        assert figures["errors"] == 0
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:4] == b"\x89PNG"
    # Each case says how far its client's microphone fell behind real time.
    assert all(isinstance(c["client_late_ms"], int) for c in result["cases"])
    assert isinstance(result["client_late_cases"], int)
    # And how long the proxy waited for a CPU against how long it ran (Linux).
    assert set(result["proxy_starved_cases"]) == {"duplex_emulated", "barge_in_emulated"}
    assert all("proxy_waited_ms_per_s" in c for c in result["cases"])


@pytest.mark.slow
def test_agents_sdk_bench_counts_what_the_real_sdk_saw_per_class() -> None:
    result = run_bench(
        "agents_sdk.py",
        *("--only", "backchannel00,utt03_clean", "--modes", "duplex_emulated", "--json"),
    )
    summary = result["summary"]
    assert isinstance(summary, dict)
    mode = summary["duplex_emulated"]
    assert set(mode["classes"]) == {"backchannel", "speech"}
    for figures in mode["classes"].values():
        assert figures["sessions"] == 1 and figures["errors"] == 0
        for key in ("interrupted", "interrupted_in_answer", "cuts", "answered_whole"):
            assert isinstance(figures[key], int)
    assert isinstance(mode["classes"]["speech"]["barge_ins_interrupted"], int)
    assert isinstance(mode["invalid_ga_events"], int)
    assert summary["totals"]["sessions"] == 2
    cases = result["cases"]
    assert isinstance(cases, list) and {c["kind"] for c in cases} == {"backchannel", "speech"}


@pytest.mark.slow
def test_sessions_bench_runs_every_mode_with_real_speech() -> None:
    result = run_bench("sessions.py", "--smoke", "--json")
    runs = {r["mode"]: r for r in result["results"]}
    assert set(runs) == {"duplex_emulated", "barge_in_emulated", "passthrough"}
    for mode, run in runs.items():
        step = run["steps"][0]
        # Every session opened and streamed, and the event-delay probe came back.
        assert step["opened"] == step["sessions"] == 2, (mode, run["errors_sample"])
        assert step["errors"] == 0, (mode, run["errors_sample"])
        assert step["probes"] > 0, mode
        assert step["proxy_cpu_pct"] > 0 and step["rss_mb"] > 0, mode
        assert run["idle_sessions"] == 2, mode
        assert "sustained" in step and "vad_lag_p99_ms" in step, mode
        # The machine's speed through the window, and the CPU figure scaled to it.
        assert step["machine_unit_ms_p50"] > 0 and step["machine_speed"] > 0, mode
        assert step["cpu_ms_per_session_s_at_ref_speed"] is not None, mode


@pytest.mark.slow
def test_store_writes_bench_measures_redis_input() -> None:
    result = run_bench("store_writes.py", "--instructions-kb", "16", "--reply-ms", "1000", "--json")
    assert result["audio_deltas"] > 0 and result["redis_input_bytes"] > 0


@needs_corpus
def test_echo_coincidence_bench_counts_locks_with_no_echo() -> None:
    result = run_bench("echo_coincidence.py", "--cases", "60", "--seed", "5", "--json")
    assert result["cases"] == 60
    locks = result["locks"]
    assert isinstance(locks, list) and len(locks) == result["locked_cases"]
    assert result["locked_ms_total"] == sum(k["locked_ms"] for k in locks)
    assert all(0 < k["longest_ms"] <= k["locked_ms"] for k in locks)


@pytest.mark.slow
def test_done_hold_bench_measures_each_end_against_the_memory_store() -> None:
    result = run_bench("done_hold.py", "--turns", "2", "--json")
    assert result["turns"] == 2
    for store in ("redis", "memory"):
        figures = result[store]
        assert isinstance(figures, dict)
        assert figures["done_gap_ms_max"] >= figures["done_gap_ms_median"] > 0, store


def _checkout_before_the_quiet_gate(into: Path) -> Path:
    """This checkout's proxy with a ``VadStats`` that has no ``quiet_total``, as before
    the VAD's quiet gate."""
    for package in ("proxy", "shim"):
        shutil.copytree(ROOT / package, into / package, ignore=shutil.ignore_patterns("__py*"))
    model = into / "proxy" / "vad_model.py"
    source = model.read_text()
    assert "    quiet_total: int = 0" in source
    model.write_text(
        "\n".join(ln for ln in source.splitlines() if not ln.startswith("    quiet_total"))
    )
    return into


def test_vad_cost_bench_runs_on_a_checkout_from_before_the_quiet_gate(tmp_path: Path) -> None:
    old = str(_checkout_before_the_quiet_gate(tmp_path))
    bench = [sys.executable, str(ROOT / "bench" / "vad_cost.py")]
    table = [*bench, "--root", old, "--seconds", "0.2", "--streams", "1", "--json"]
    out = subprocess.run(table, cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert out.returncode == 0, out.stderr[-600:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["inferred_pct"] for r in rows if "inferred_pct" in r] == [100, 100]
    # "--root=PATH" imports that checkout too.
    timed = subprocess.run(
        [*bench, f"--root={old}", "--bookkeeping"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert json.loads(timed.stdout.splitlines()[-1])["root"] == old, timed.stderr[-600:]


def test_relay_cost_bench_times_the_ga_relay_of_a_checkout() -> None:
    result = run_bench("relay_cost.py", "--runs", "1", "--json", "--root", str(ROOT))
    assert result["shim_from"] == ROOT.name
    assert result["audio_s"] > 10
    for key in ("relay_cpu_ms_per_session_s", "handle_us_per_append", "snapshot_us"):
        figure = result[key]
        assert isinstance(figure, float) and figure > 0, key
