"""What the probe's tests run it against, on loopback: a reference backend (with faults),
the proxy in front of one, the probe's checks run on a URL and their report as a table,
and the CLI's arguments parsed as ``duplex-proxy probe`` parses them."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from aiohttp import web

from proxy.app import build_app
from proxy.config import config_from_dict
from proxy.probe.cli import configure_parser
from proxy.probe.context import ProbeSettings
from proxy.probe.runner import ProbeReport, run_probe_checks
from proxy.reference.options import ReferenceOptions
from proxy.reference.server import build_reference_app
from tests.servers import serve_app

#: Long enough for the probe to talk over the answer and still be heard while it plays.
REPLY_MS = 2500
MODEL = "m"
ROOT_DIR = Path(__file__).resolve().parents[1]


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Run ``app`` on a free loopback port; yields its ``ws://`` realtime URL."""
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


#: The stand-ins' ``max_sessions``, as a real server is configured with one: more than the
#: probe's capacity check opens (16) plus the sessions other checks leave in their
#: disconnect grace, so the backend itself never refuses here (its default is 1).
BACKEND_MAX_SESSIONS = 64


@asynccontextmanager
async def backend(kind: str, *faults: str, reply_ms: int = REPLY_MS) -> AsyncIterator[str]:
    options = ReferenceOptions(faults=frozenset(faults), max_sessions=BACKEND_MAX_SESSIONS)
    async with serve(build_reference_app(kind, reply_ms=reply_ms, options=options)) as url:
        yield url


#: The proxy routes' session limit in these tests: the fairness check's sessions fit, the
#: capacity check finds the limit.
MAX_SESSIONS = 4


@asynccontextmanager
async def proxied(upstream: str, max_sessions: int | None = MAX_SESSIONS) -> AsyncIterator[str]:
    route = {"model": MODEL, "upstream": upstream, "max_sessions": max_sessions}
    routes = [{k: v for k, v in route.items() if v is not None}]
    config = config_from_dict({"routes": routes, "auth": {"mode": "none"}})
    async with serve(build_app(config)) as url:
        yield url


async def probe(
    url: str,
    only: Sequence[str] | None = None,
    sessions: int = 4,
    metrics_url: str | None = None,
) -> ProbeReport:
    settings = ProbeSettings(url=url, model=MODEL, sessions=sessions, metrics_url=metrics_url)
    return await run_probe_checks(settings, only=only)


def table(report: ProbeReport) -> str:
    return "\n".join(f"{r.name}: {r.verdict}: {r.summary}" for r in report.results)


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure_parser(parser)
    return parser.parse_args(list(argv))
