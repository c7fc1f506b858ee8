"""The preamble every resume-based check shares: open, read the token, run, close both.

``resume`` and ``dedup`` both need a live session that can be resumed, a scenario
that may open a second connection, and both connections closed whatever happens.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from proxy.probe.client import ProbeConnection
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed
from proxy.probe.result import CheckResult

Scenario = Callable[
    [ProbeContext, ProbeConnection], Awaitable[tuple[CheckResult, ProbeConnection | None]]
]


async def run_resumable(
    ctx: ProbeContext, name: str, scenario: Scenario, *, honour_declared: bool
) -> CheckResult:
    """Run ``scenario`` on a fresh resumable session; ``unsupported`` when there is none.

    ``honour_declared``: a session that declares ``supports_session_resume: false``
    is reported unsupported before looking for a token.
    """
    if ctx.dialect == "turn":
        return CheckResult(name, "unsupported", "turn-based dialect: no session.resume")
    try:
        first = await ctx.open()
    except OpenFailed as exc:
        return CheckResult(name, "error", f"no session: {exc}")
    second: ProbeConnection | None = None
    try:
        info = first.info
        assert info is not None
        caps = info.capabilities or {}
        if honour_declared and caps.get("supports_session_resume") is False:
            return CheckResult(name, "unsupported", "declares supports_session_resume=false")
        if info.resume_token is None or info.session_id is None:
            return CheckResult(
                name, "unsupported", "session.created carries no resume_token / session id"
            )
        result, second = await scenario(ctx, first)
        return result
    finally:
        for conn in (first, second):
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
