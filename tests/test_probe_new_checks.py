"""dedup, capacity, gpu_memory: each passing where it should and failing on its own fault.

The passing endpoint is the proxy (a route with ``max_sessions``) in front of the
``duplex`` reference backend. Each fault comes from ``tests/probe_standins.py``: a
man-in-the-middle in front of that same proxy that breaks exactly one thing, so a
failure can only come from the check that exists for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.probe_stacks import backend, probe, proxied, table
from tests.probe_standins import PER_SESSION_MB, Faults, middleman

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@asynccontextmanager
async def proxy_behind(faults: Faults, max_sessions: int | None = 2) -> AsyncIterator[str]:
    """The proxy in front of the duplex backend, behind a middleman with ``faults``."""
    async with (
        backend("duplex") as upstream,
        proxied(upstream, max_sessions) as url,
        middleman(url, faults) as man,
    ):
        yield man.url


async def test_dedup_passes_through_the_proxy_and_through_a_faithful_middleman() -> None:
    async with proxy_behind(Faults()) as url:
        report = await probe(url, only=["dedup"])
    result = report.result("dedup")
    assert result.verdict == "pass", table(report)
    assert result.data["items_created"] == 1 and result.data["user_turns_after_resend"] == 0
    assert result.data["resent_events"] > 10, "the speech went out as tagged appends"


@pytest.mark.parametrize(
    ("fault", "reasons"),
    [
        ("strip_resent_ids", ["2 items, not 1", "heard again"]),
        ("duplicate_after_resume", ["after the resume repeated", "delivered twice"]),
    ],
)
async def test_dedup_fails_on_the_fault_it_exists_for(fault: str, reasons: list[str]) -> None:
    async with proxy_behind(Faults(**{fault: True})) as url:
        report = await probe(url, only=["dedup"])
    result = report.result("dedup")
    assert result.verdict == "fail", table(report)
    for reason in reasons:
        assert reason in result.summary, table(report)


async def test_dedup_is_unsupported_on_a_turn_based_endpoint() -> None:
    async with backend("turn") as url:
        report = await probe(url, only=["dedup"])
    assert report.result("dedup").verdict == "unsupported", table(report)


async def test_capacity_finds_the_proxy_route_limit() -> None:
    async with backend("duplex") as upstream, proxied(upstream, 3) as url:
        report = await probe(url, only=["capacity"])
    result = report.result("capacity")
    assert result.verdict == "pass", table(report)
    assert result.data["limit"] == 3 and result.data["refusal_code"] == "server_at_capacity"
    assert result.data["refusal_close_code"] == 1013 and result.data["released"] is True
    assert result.data["grace_holds_slot"] in (True, False)


async def test_capacity_fails_when_nothing_is_ever_refused() -> None:
    async with proxy_behind(Faults(), max_sessions=None) as url:
        report = await probe(url, only=["capacity"])
    result = report.result("capacity")
    assert result.verdict == "fail", table(report)
    assert "accepted all 16 sessions" in result.summary and result.data["limit"] is None


async def test_capacity_fails_on_a_refusal_without_a_code() -> None:
    faults = Faults(limit=2, refusal_code=None)
    async with proxy_behind(faults, max_sessions=None) as url:
        report = await probe(url, only=["capacity"])
    result = report.result("capacity")
    assert result.verdict == "fail", table(report)
    assert "session 3 was refused without an error code" in result.summary
    assert result.data["limit"] == 2


async def test_capacity_passes_on_a_middleman_refusing_like_vllm_omni() -> None:
    async with proxy_behind(Faults(limit=2), max_sessions=None) as url:
        report = await probe(url, only=["capacity"])
    result = report.result("capacity")
    assert result.verdict == "pass", table(report)
    assert result.data["refusal_code"] == "resource_exhausted"


async def test_gpu_memory_is_unsupported_without_a_metrics_url() -> None:
    async with backend("duplex") as url:
        report = await probe(url, only=["gpu_memory"])
    result = report.result("gpu_memory")
    assert result.verdict == "unsupported" and "--metrics-url" in result.summary


async def test_gpu_memory_reads_the_metrics_while_sessions_come_and_go() -> None:
    async with backend("duplex") as upstream, middleman(upstream) as man:
        report = await probe(
            man.url, only=["fairness", "gpu_memory"], sessions=3, metrics_url=man.metrics_url
        )
    result = report.result("gpu_memory")
    assert result.verdict == "pass", table(report)
    data = result.data
    assert data["memory_source"] == "DCGM_FI_DEV_FB_USED" and data["load_phase"] == "fairness"
    assert data["growth_per_session_mb"] == PER_SESSION_MB, data
    assert data["after_mb"] == data["baseline_mb"] < data["peak_mb"]
    assert "gpu_memory" in report.required
    assert result.series["samples"], "the report plots the samples"


async def test_gpu_memory_fails_when_ended_sessions_keep_their_memory() -> None:
    async with backend("duplex") as upstream, middleman(upstream, Faults(leak=True)) as man:
        report = await probe(
            man.url, only=["fairness", "gpu_memory"], sessions=3, metrics_url=man.metrics_url
        )
    result = report.result("gpu_memory")
    assert result.verdict == "fail", table(report)
    assert "did not give it back" in result.summary and "still hold it" in result.summary


async def test_gpu_memory_error_when_the_metrics_url_does_not_answer() -> None:
    async with backend("duplex") as url:
        report = await probe(url, only=["gpu_memory"], metrics_url="http://127.0.0.1:9/metrics")
    result = report.result("gpu_memory")
    assert result.verdict == "error" and "cannot read" in result.summary, table(report)
