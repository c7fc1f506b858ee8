"""Check 6, backpressure: what happens to a client that stops reading?

A slow client (``docs/probe.md``) must not grow the server's memory without bound. The
probe makes the endpoint produce output much faster than real time -- every
``conversation.item.create`` is echoed back (added/created/done), every
``session.update`` answered with the whole session -- while it stops reading the
socket (aiohttp then stops reading the transport, so TCP pushes back on the
endpoint). After a pause it reads again and counts what had been queued for it.

Observed: requests accepted (a send that blocks means the endpoint stopped
reading the probe: pacing), bytes and frames delivered after the stall, the close
code and reason, error events. Verdict: ``fail`` when the endpoint held at least
``backpressure_limit_mb`` for the stalled reader (unbounded growth); ``pass``
when it closed or dropped the connection, paced the probe, or dropped output,
below that; ``unsupported`` when nothing could make it produce output faster
than real time (the turn-based dialect).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import uuid
from typing import Any

from proxy.probe.client import ProbeConnection
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed
from proxy.probe.result import CheckResult, failed, passed
from shim.wire import error_code

NAME = "backpressure"
MB = 1024 * 1024
PAYLOAD_CHARS = 64 * 1024
SEND_BLOCKED_S = 2.0
HOLD_S = 2.0
DRAIN_QUIET_S = 1.5
DRAIN_MAX_S = 30.0


def _item_create(text: str) -> dict[str, Any]:
    return {
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        },
    }


def _instructions(text: str) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", "instructions": text}}


async def _echo(conn: ProbeConnection, request: dict[str, Any]) -> int:
    """Bytes the endpoint sends back for one ``request`` (0: refused or silent)."""
    before, errors = conn.bytes, len(conn.errors)
    await conn.send(request)
    await conn.wait_until(lambda: conn.bytes - before >= PAYLOAD_CHARS, 1.5)
    await conn.wait_until(lambda: False, 0.3)  # the rest of the echo
    if len(conn.errors) > errors:
        return 0
    return conn.bytes - before


async def _amplifier(conn: ProbeConnection, text: str) -> tuple[str, dict[str, Any], int] | None:
    best: tuple[str, dict[str, Any], int] | None = None
    for kind, request in (
        ("conversation.item.create", _item_create(text)),
        ("session.update", _instructions(text)),
    ):
        echoed = await _echo(conn, request)
        if echoed >= PAYLOAD_CHARS and (best is None or echoed > best[2]):
            best = (kind, request, echoed)
    return best


async def run(ctx: ProbeContext) -> CheckResult:
    if ctx.dialect == "turn":
        return CheckResult(
            NAME,
            "unsupported",
            "turn-based dialect: no request makes it produce output faster than real time",
        )
    try:
        conn = await ctx.open(record=False)
    except OpenFailed as exc:
        return CheckResult(NAME, "error", f"no session: {exc}")
    result: CheckResult | None = None
    try:
        result = await _measure(ctx, conn)
        return result
    finally:
        # A session that was never stalled (nothing to amplify) is ended properly, or
        # it holds its slot through the endpoint's disconnect grace.
        idle = result is not None and result.verdict == "unsupported"
        with contextlib.suppress(Exception):
            await conn.close(say_goodbye=idle)


async def _measure(ctx: ProbeContext, conn: ProbeConnection) -> CheckResult:
    text = ("probe backpressure " + uuid.uuid4().hex + " ") * (PAYLOAD_CHARS // 52 + 1)
    text = text[:PAYLOAD_CHARS]
    found = await _amplifier(conn, text)
    if found is None:
        return CheckResult(
            NAME,
            "unsupported",
            "neither conversation.item.create nor session.update is echoed: nothing to amplify",
        )
    kind, request, echoed = found
    limit = ctx.settings.backpressure_limit_mb * MB
    wanted = ctx.settings.backpressure_request_mb * MB
    count = math.ceil(wanted / echoed)
    data: dict[str, Any] = {"request": kind, "echo_bytes_per_request": echoed}
    # Errors while the probe looked for a request to amplify are its own doing
    # (an endpoint may refuse one of the two kinds); only those during the stall count.
    errors_before = len(conn.errors)
    conn.acking = False  # a stalled reader acknowledges nothing
    conn.pause_reading()
    loop = asyncio.get_running_loop()
    stalled_at = loop.time()
    base_bytes, base_frames = conn.bytes, conn.frames
    sent = 0
    paced = False
    # For the report's plot: output requested and output received, over time.
    timeline: list[list[float]] = []

    async def watch() -> None:
        while True:
            at = round(loop.time() - stalled_at, 2)
            timeline.append([at, sent * echoed / MB, (conn.bytes - base_bytes) / MB])
            await asyncio.sleep(0.1)

    watcher = asyncio.create_task(watch(), name="probe-backpressure-watch")
    try:
        for _ in range(count):
            try:
                ok = await asyncio.wait_for(conn.send(request), SEND_BLOCKED_S)
            except TimeoutError:
                paced = True
                break
            if not ok:
                break
            sent += 1
        await asyncio.sleep(HOLD_S)
        stalled_s = loop.time() - stalled_at
        conn.resume_reading()
        await _drain(conn)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    delivered = conn.bytes - base_bytes
    data.update(
        requests_planned=count,
        requests_sent=sent,
        requested_mb=round(sent * echoed / MB, 1),
        stalled_s=round(stalled_s, 1),
        delivered_mb=round(delivered / MB, 1),
        delivered_frames=conn.frames - base_frames,
        send_blocked=paced,
        closed=conn.closed.is_set(),
        close_code=conn.close_code if conn.closed.is_set() else None,
        close_reason=conn.close_reason or None,
        errors=sorted({str(error_code(e.data)) for e in conn.errors[errors_before:]}),
        limit_mb=ctx.settings.backpressure_limit_mb,
    )
    result = _verdict(data, delivered, limit, sent * echoed)
    result.series = {"timeline": timeline, "stalled_s": round(stalled_s, 2)}
    return result


async def _drain(conn: ProbeConnection) -> None:
    """Read until the endpoint has been quiet for ``DRAIN_QUIET_S`` (or closed)."""
    loop = asyncio.get_running_loop()
    last = [conn.bytes, loop.time()]

    def drained() -> bool:
        if conn.bytes != last[0]:
            last[:] = [conn.bytes, loop.time()]
        return conn.closed.is_set() or loop.time() - last[1] >= DRAIN_QUIET_S

    await conn.wait_until(drained, DRAIN_MAX_S)


def _verdict(data: dict[str, Any], delivered: int, limit: int, requested: int) -> CheckResult:
    """``delivered``: what reached the probe once it read again -- what had been held for it."""
    held = f"{delivered / MB:.1f} MB"
    bound = f"limit {limit // MB} MB"
    stall = f"{requested / MB:.0f} MB of output requested over a {data['stalled_s']:.0f} s stall"
    notes = (
        [f"error events during the stall: {', '.join(data['errors'])}"] if data["errors"] else []
    )
    if delivered >= limit:
        how = "then closed" if data["closed"] else "without closing"
        return failed(
            NAME,
            [
                f"held {held} for a client that stopped reading, {how} ({bound}): "
                f"unbounded buffering ({stall})"
            ],
            data,
            notes,
        )
    if data["closed"]:
        code = data["close_code"]
        reason = f" {data['close_reason']!r}" if data["close_reason"] else ""
        how = (
            "dropped the connection without a close frame"
            if code in (None, 1006)
            else f"closed it ({code}{reason})"
        )
        return passed(
            NAME,
            f"bounded: {stall}; the endpoint held {held} ({bound}) for the stalled client, "
            f"then {how}",
            data,
            notes,
        )
    if data["send_blocked"]:
        return passed(
            NAME,
            f"bounded: the endpoint stopped reading the stalled client after "
            f"{data['requests_sent']} requests (TCP pushback) and held {held} ({bound})",
            data,
            notes,
        )
    dropped = f"{(requested - delivered) / MB:.1f} MB"
    return passed(
        NAME,
        f"bounded: {stall}; {held} delivered when it read again ({bound}), {dropped} dropped",
        data,
        notes,
    )
