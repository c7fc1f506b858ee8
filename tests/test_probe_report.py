"""``--compare`` and ``--report``, run for real through the command's entry point.

The "model server" is the ``duplex`` reference backend behind a faithful middleman
that also serves GPU metrics (``tests/probe_standins.py``); the proxy sits in front
of it with a route session limit. ``run_probe`` owns its event loop, so it runs in a
worker thread while the servers serve on the test's loop.
"""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path

import orjson
import pytest

from proxy.probe.cli import run_probe
from tests.probe_stacks import args, backend, proxied
from tests.probe_standins import middleman

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def figures(page: str) -> dict[str, bytes]:
    """Every inline figure of the report, by its title, decoded."""
    found = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"', page)
    return {title: base64.b64decode(data) for title, data in found}


async def test_compare_and_report_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page_path = tmp_path / "probe.html"
    checks = "barge_in,backpressure,fairness,gpu_memory"
    async with (
        backend("duplex") as upstream,
        middleman(upstream) as server,
        proxied(server.url, 4) as url,
    ):
        argv = [url, "--model", "m", "--checks", checks, "--sessions", "2", "--no-color"]
        argv += ["--compare", server.url, "--metrics-url", server.metrics_url]
        argv += ["--report", str(page_path), "--barge-in-trials", "2"]
        code = await asyncio.to_thread(run_probe, args(*argv))
    captured = capsys.readouterr()
    out = captured.out
    assert "DIRECT" in out and "PROXIED" in out, out
    assert "direct [5/5] gpu_memory" in captured.err and "proxied [5/5]" in captured.err
    barge_in = next(line for line in out.splitlines() if line.startswith("barge_in"))
    assert re.search(r"\d+ ms -> \d+ ms \([+-]\d+ ms\)", barge_in), barge_in
    assert code == 0, out
    page = page_path.read_text()
    assert "Side by side" in page and "through the proxy" in page
    shown = figures(page)
    assert set(shown) == {
        "Barge-in",
        "Fairness across sessions",
        "GPU memory",
        "Backpressure buffer growth",
    }
    for title, png in shown.items():
        assert png.startswith(PNG_MAGIC) and len(png) > 5000, title
    assert not re.search(r'(src|href)="(?!data:)', page), "self-contained: nothing to fetch"


async def test_compare_json_keeps_each_run_in_the_single_run_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with backend("duplex") as upstream, proxied(upstream, 4) as url:
        argv = [url, "--model", "m", "--checks", "barge_in", "--json", "--compare", upstream]
        argv += ["--barge-in-trials", "2"]
        code = await asyncio.to_thread(run_probe, args(*argv))
    lines = capsys.readouterr().out.splitlines()  # the proxy's own logs go to stdout too
    data = orjson.loads("\n".join(lines[lines.index("{") : len(lines) - lines[::-1].index("}")]))
    assert code == data["exit_code"] == data["proxied"]["exit_code"] == 0
    assert data["direct"]["url"] == upstream and data["proxied"]["url"] == url
    assert set(data["direct"]) == set(data["proxied"])
    row = next(r for r in data["comparison"] if r["check"] == "barge_in")
    assert row["direct"] == row["proxied"] == "pass"
    assert row["delta_ms"] == row["proxied_ms"] - row["direct_ms"]
    barge_in = data["proxied"]["checks"][1]
    assert "2 trials: median" in barge_in["summary"], barge_in["summary"]


async def test_single_run_report_without_metrics(tmp_path: Path) -> None:
    page_path = tmp_path / "one.html"
    async with backend("duplex") as url:
        argv = [url, "--model", "m", "--checks", "fairness,gpu_memory", "--sessions", "2"]
        argv += ["--report", str(page_path)]
        code = await asyncio.to_thread(run_probe, args(*argv))
    page = page_path.read_text()
    assert code == 1, "gpu_memory is named by --checks, so it is required, and unsupported"
    assert "not measured: no --metrics-url" in page
    assert set(figures(page)) == {"Fairness across sessions"}
