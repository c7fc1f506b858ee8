"""A check that cannot fail is a defect: each one, against an endpoint broken in exactly its way.

The reference backends take fault flags (``ReferenceOptions.faults``); each test
turns one on and runs only the check that must catch it. The same checks pass
against the healthy backend (``test_probe.py::test_duplex_backend_directly_...``).
``declared`` fails on the turn backend there; here also on endpoints whose
declaration is missing or contradicts itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from aiohttp import WSMsgType, web

from tests.probe_stacks import backend, probe, serve, table

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


@pytest.mark.parametrize(
    ("fault", "check", "reasons"),
    [
        ("ignore_cancel", "barge_in", ["reported cancelled but", "audio deltas"]),
        ("deaf_while_speaking", "full_duplex_input", ["no reaction to"]),
        ("ignore_truncate", "truncation", ["transcript not cut"]),
        ("replay_duplicates", "resume", ["repeated events", "delivered twice"]),
        ("replay_drops", "resume", ["lost events"]),
        ("unbounded_buffer", "backpressure", ["unbounded buffering"]),
        ("starve_sessions", "fairness", ["starved"]),
    ],
)
async def test_each_check_fails_on_the_fault_it_exists_for(
    fault: str, check: str, reasons: list[str]
) -> None:
    async with backend("duplex", fault) as url:
        report = await probe(url, only=[check])
    result = report.result(check)
    assert result.verdict == "fail", table(report)
    for reason in reasons:
        assert reason in result.summary, table(report)
    assert report.exit_code == 1


async def test_deaf_no_barge_in_backend_fails_full_duplex_input() -> None:
    """Hearing overlap is what separates Nemotron-like models from half duplex."""
    async with backend("duplex-no-barge-in", "deaf_while_speaking") as url:
        report = await probe(url, only=["full_duplex_input"])
    assert report.result("full_duplex_input").verdict == "fail", table(report)


async def test_resume_replay_faults_show_in_the_numbers() -> None:
    async with backend("duplex", "replay_drops") as url:
        report = await probe(url, only=["resume"])
    data = report.result("resume").data
    assert len(data["gaps"]) == 1 and data["repeats"] == []


async def test_fairness_reports_every_starved_session() -> None:
    async with backend("turn", "starve_sessions") as url:
        report = await probe(url, only=["fairness"], sessions=3)
    result = report.result("fairness")
    assert result.verdict == "fail", table(report)
    rows = result.data["per_session"]
    assert sum(1 for row in rows if row.get("starved")) == 2, rows


# ---- declarations that are missing or contradict themselves ----


@asynccontextmanager
async def ga_server(session: dict[str, Any], **top: Any) -> AsyncIterator[str]:
    """A GA-style server that sends ``session.created`` at once and then only listens."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        created = {"type": "session.created", "event_id": "event_1", "session": session, **top}
        await ws.send_str(orjson.dumps(created).decode())
        async for msg in ws:
            if (
                msg.type == WSMsgType.TEXT
                and orjson.loads(msg.data).get("type") == "session.update"
            ):
                updated = {"type": "session.updated", "event_id": "event_2", "session": session}
                await ws.send_str(orjson.dumps(updated).decode())
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve(app) as url:
        yield url


async def test_declared_fails_on_a_declaration_that_contradicts_itself() -> None:
    caps = {
        "supports_barge_in": "yes",
        "supports_session_resume": True,
        "implementation_level": "magic",
    }
    async with ga_server({"id": "s1", "type": "realtime", "capabilities": caps}) as url:
        report = await probe(url, only=["declared"])
    result = report.result("declared")
    assert result.verdict == "fail", table(report)
    assert "supports_barge_in is 'yes', not a boolean" in result.summary
    assert "implementation_level 'magic'" in result.summary
    assert "no resume_token" in result.summary


async def test_declared_is_unsupported_when_a_realtime_session_declares_nothing() -> None:
    async with ga_server({"id": "s1", "type": "realtime"}) as url:
        report = await probe(url, only=["declared"])
    result = report.result("declared")
    assert result.verdict == "unsupported", table(report)
    assert result.data["dialect"] == "realtime"
    assert report.exit_code == 1


async def test_checks_report_error_when_nothing_listens() -> None:
    async with serve(web.Application()) as url:
        pass  # closed again: the port is free and refuses connections
    report = await asyncio.wait_for(probe(url, only=["barge_in"]), 20)
    assert [r.verdict for r in report.results] == ["error", "error"]
    assert report.results[1].summary == "skipped: no session could be opened"
