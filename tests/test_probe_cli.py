"""``duplex-proxy probe``: arguments, exit status, table and JSON output, run for real.

``run_probe`` owns its event loop (``asyncio.run``), so it runs in a worker thread
while the reference backend it probes serves on the test's loop.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import orjson
import pytest

from proxy.__main__ import main
from proxy.probe.cli import run_probe
from tests.probe_stacks import ROOT_DIR, args, backend

pytestmark = pytest.mark.timeout(90)


def test_probe_subcommand_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["probe", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    options = ("--model", "--sessions", "--speech", "--json", "--require", "--checks")
    options += ("--metrics-url", "--capacity-max", "--compare", "--report")
    for option in options:
        assert option in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ws://x/v1/realtime", "--require", "barge_in,latency"], "unknown check(s) latency"),
        (["ws://x/v1/realtime", "--checks", "nope"], "unknown check(s) nope"),
        (
            ["ws://x/v1/realtime", "--checks", "barge_in", "--require", "resume"],
            "leaves out: resume",
        ),
        (["ws://x/v1/realtime", "--speech", "/nonexistent.wav"], "bad --speech"),
        (["http://x/v1/realtime"], "must start with ws://"),
        (["ws://x/v1/realtime", "--sessions", "0"], "at least 1"),
        (["ws://x/v1/realtime", "--capacity-max", "0"], "--capacity-max must be at least 1"),
        (["ws://x/v1/realtime", "--compare", "http://y"], "must start with ws://"),
        (["ws://x/v1/realtime", "--metrics-url", "y:9400"], "--metrics-url must start with http"),
    ],
)
def test_bad_arguments_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_probe(args(*argv)) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
async def test_json_for_ci_and_exit_1_for_a_turn_based_endpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with backend("turn") as url:
        code = await asyncio.to_thread(
            run_probe,
            args(url, "--model", "m", "--json", "--checks", "fairness", "--sessions", "2"),
        )
    captured = capsys.readouterr()
    report = orjson.loads(captured.out)
    assert code == 1 and report["exit_code"] == 1
    assert report["turn_based"] is True and report["required"] == ["fairness"]
    assert [c["name"] for c in report["checks"]] == ["declared", "fairness"]
    assert report["checks"][1]["verdict"] == "pass", "fairness passed; turn-based still fails"
    assert "[2/2] fairness" in captured.err, "progress goes to stderr"


@pytest.mark.slow
async def test_table_and_exit_0_when_the_required_checks_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with backend("duplex") as url:
        code = await asyncio.to_thread(
            run_probe, args(url, "--model", "m", "--checks", "barge_in", "--no-color")
        )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "barge_in" in out and "✓ pass" in out and "\x1b[" not in out
    assert "PASS: 1/1 required checks passed" in out, "declared runs, barge_in is required"


@pytest.mark.slow
async def test_the_installed_command_runs_the_probe() -> None:
    async with backend("duplex") as url:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "proxy",
            "probe",
            url,
            "--checks",
            "declared",
            "--json",
            cwd=ROOT_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    report = orjson.loads(out)
    assert report["checks"][0]["data"]["capabilities"]["implementation_level"] == (
        "model_native_duplex"
    )
