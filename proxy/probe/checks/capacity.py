"""Check 9, capacity: how many sessions at once, and how does a full endpoint say no?

A GPU model server has room for a fixed number of sessions (vLLM-Omni's
``max_sessions`` defaults to 1 and refuses the next with ``resource_exhausted``; a
proxy route's ``max_sessions`` refuses with ``server_at_capacity``, close 1013).
A client can only back off or go elsewhere if the refusal says so.

The probe opens sessions one after another and keeps them open until one is
refused, at most ``--capacity-max`` (default 16). Then, where the endpoint resumes
sessions, it drops one held session without a close frame (a lost network) and
opens another: refused means a session in its disconnect grace keeps its slot (as
vLLM-Omni's does), accepted means the slot is freed at once. It then resumes the
dropped session and ends it, closes the rest, and opens one more to see the slots
come back.

Verdict: ``pass`` when a session beyond the limit is refused with an error code;
``fail`` when all ``--capacity-max`` sessions were accepted (no limit: a full server
degrades every session instead of refusing the next), when the refusal carries no
error code (a client cannot tell "full" from "broken"), or when no session can be
opened again after all were closed.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from proxy.probe.client import ProbeConnection
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed, ResumeRequest, resume_session
from proxy.probe.result import CheckResult, failed, passed

NAME = "capacity"
#: After a drop, time for the endpoint to notice before the slot question is asked.
DROP_SETTLE_S = 0.5
#: After closing everything, how long the probe keeps trying to open one session.
RELEASE_WITHIN_S = 5.0
#: With --metrics-url, how long the sessions stay open at the limit before the rest.
HOLD_S = 1.0


async def run(ctx: ProbeContext) -> CheckResult:
    held: list[ProbeConnection] = []
    try:
        return await _measure(ctx, held)
    finally:
        await asyncio.gather(*(c.close() for c in held), return_exceptions=True)


async def _measure(ctx: ProbeContext, held: list[ProbeConnection]) -> CheckResult:
    most = ctx.settings.capacity_max
    refusal: OpenFailed | None = None
    for _ in range(most + 1):
        try:
            held.append(await ctx.open(record=False))
        except OpenFailed as exc:
            refusal = exc
            break
        if len(held) >= most:
            break
    ctx.loaded[NAME] = len(held)
    if ctx.sampler is not None:
        # Opening is quick on a fast endpoint: hold the load long enough to be sampled.
        await asyncio.sleep(max(HOLD_S, 3 * ctx.settings.metrics_interval_s))
    data: dict[str, Any] = {"capacity_max": most, "accepted": len(held)}
    if refusal is None:
        data["limit"] = None
        return failed(
            NAME,
            [
                f"accepted all {len(held)} sessions the probe opened (--capacity-max {most}) "
                "without refusing one: no session limit, so a full server slows every session "
                "down instead of refusing the next"
            ],
            data,
            [],
        )
    data.update(
        limit=len(held),
        refusal_code=refusal.code,
        refusal_close_code=refusal.close_code,
        refusal_message=str(refusal),
    )
    notes: list[str] = []
    if held:
        data["grace_holds_slot"] = await _grace_holds_slot(ctx, held, notes)
    for conn in held:
        await conn.close()
    held.clear()
    data["released"] = await _reopens(ctx, held)
    return _verdict(data, notes)


async def _grace_holds_slot(
    ctx: ProbeContext, held: list[ProbeConnection], notes: list[str]
) -> bool | None:
    """Drop one session (no close frame); can another open in its place?"""
    dropped = held[-1]
    info = dropped.info
    if info is None or info.resume_token is None or info.session_id is None:
        notes.append("sessions cannot be resumed: no disconnect grace to test")
        return None
    held.pop()
    dropped.drop()
    await dropped.wait_until(dropped.closed.is_set, 2.0)
    await dropped.close(say_goodbye=False)
    await asyncio.sleep(DROP_SETTLE_S)
    try:
        held.append(await ctx.open(record=False))
        holds = False
    except OpenFailed:
        holds = True
    # End the dropped session for real so its slot does not wait out the grace.
    request = ResumeRequest(info.session_id, info.resume_token, dropped.last_seq, info.url)
    with contextlib.suppress(Exception):
        conn, answer = await resume_session(ctx.http, request)
        if answer is not None and answer.type == "session.resumed":
            conn.adopt(info)
            await conn.send({"type": "session.close"})
        await conn.close(say_goodbye=False)
    return holds


async def _reopens(ctx: ProbeContext, held: list[ProbeConnection]) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RELEASE_WITHIN_S
    while True:
        try:
            held.append(await ctx.open(record=False))
            return True
        except OpenFailed:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.5)


def _refusal(data: dict[str, Any]) -> str:
    code, close = data["refusal_code"], data["refusal_close_code"]
    bits = [f"error code {code}" if code else "no error code"]
    bits.append(f"close {close}" if close else "no close code")
    return ", ".join(bits)


def _verdict(data: dict[str, Any], notes: list[str]) -> CheckResult:
    limit = data["limit"]
    grace = data.get("grace_holds_slot")
    if grace is True:
        notes.append("a dropped session keeps its slot during its disconnect grace")
    elif grace is False:
        notes.append("a dropped session frees its slot at once (its grace holds no slot)")
    reasons: list[str] = []
    if not data["refusal_code"]:
        reasons.append(
            f"session {limit + 1} was refused without an error code ({_refusal(data)}; "
            f"{data['refusal_message']}): a client cannot tell a full endpoint from a broken one"
        )
    if not data["released"]:
        reasons.append(
            f"no session could be opened {RELEASE_WITHIN_S:.0f} s after all "
            f"{limit} were closed: slots are not given back"
        )
    if reasons:
        return failed(NAME, reasons, data, notes)
    return passed(
        NAME,
        f"limit {limit} session(s): session {limit + 1} refused ({_refusal(data)}); "
        "a slot was free again after closing",
        data,
        notes,
    )
