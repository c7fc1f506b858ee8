"""Check 5, resume: lose the connection mid-answer, come back, lose nothing, repeat nothing.

vLLM-Omni duplex resume (``docs/probe.md``): ``session.created`` gives
``resume_token`` and the id at ``session.id``; on a new connection the first event
is ``session.resume {session_id, resume_token, last_received_server_event_seq}``;
the endpoint answers ``session.resumed`` and replays every event after that seq,
verbatim, then carries on.

The probe drops the socket (no close frame) while the answer is streaming, just
after an event whose double application is observable (``conversation.item.create``
of a marked user item, or ``input_audio_buffer.clear``) took effect, resumes, and sends
that event again with the same ``event_id`` -- a client cannot know whether the first
copy arrived. The probe waits to see the first copy's effect before the drop: a copy
still unread when the socket is reset is lost with it (the peer's unread bytes go with
the reset), and a re-send applied once would then say nothing about dedupe. Checked:
the events after the resume carry ``server_event_seq`` contiguous from the last one
received, in order, with no ``event_id`` seen twice; the interrupted answer never ends
twice; the marked event took effect exactly once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from typing import Any

from proxy.probe.client import ProbeConnection, SessionInfo
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import ResumeRequest, resume_session
from proxy.probe.marker import Marker, choose_marker
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.resumable import run_resumable
from proxy.probe.speaker import converse, voice_for
from shim.wire import error_code

NAME = "resume"
DROP_AFTER_MS = 500
GAP_S = 0.4
SETTLE_S = 0.3
#: How long the probe follows the resumed session (replay, then live events).
WINDOW_S = 3.0
#: How long the probe waits to see the marker's first copy take effect before the drop.
MARKER_WAIT_S = 2.0


def seq_problems(before: int, seqs: list[int]) -> dict[str, list[int]]:
    """Gaps, repeats and reorderings in the seqs after ``before`` (the last one received)."""
    gaps: list[int] = []
    repeats: list[int] = []
    backwards: list[int] = []
    expected = before + 1
    seen: set[int] = set()
    for seq in seqs:
        if seq in seen or seq <= before:
            repeats.append(seq)
            continue
        seen.add(seq)
        if seq < expected:
            backwards.append(seq)
        elif seq > expected:
            gaps.extend(range(expected, seq))
        expected = max(expected, seq + 1)
    return {"gaps": gaps, "repeats": repeats, "out_of_order": backwards}


async def run(ctx: ProbeContext) -> CheckResult:
    return await run_resumable(ctx, NAME, _scenario, honour_declared=True)


async def _scenario(
    ctx: ProbeContext, first: ProbeConnection
) -> tuple[CheckResult, ProbeConnection | None]:
    info = first.info
    assert info is not None and info.resume_token is not None and info.session_id is not None
    marker = await choose_marker(first)
    voice = voice_for(first, ctx.settings.chunk_ms)
    try:
        _, track = await converse(
            first, voice, ctx.stimulus.turn, timeout_s=ctx.settings.response_timeout_s
        )
        if track is None:
            return CheckResult(NAME, "error", "no answer to the probe's turn"), None
        await first.wait_until(lambda: track.audio_ms >= DROP_AFTER_MS or track.finished, 5.0)
    finally:
        await voice.aclose()
    data: dict[str, Any] = {"marker": marker.kind if marker else None}
    if marker is not None:
        await first.send(marker.event)
        seen = await first.wait_until(lambda: marker.count(first.events) >= 1, MARKER_WAIT_S)
        data["marker_seen_before_drop"] = seen
    first.drop()
    await first.wait_until(first.closed.is_set, 2.0)
    last = first.last_seq
    data.update(
        last_seq_before_drop=last,
        mid_answer=not track.finished,
        audio_before_drop_ms=round(track.audio_ms),
    )
    await asyncio.sleep(GAP_S)
    request = ResumeRequest(info.session_id, info.resume_token, last, info.url)
    second, answer = await resume_session(ctx.http, request)
    if answer is None or answer.type != "session.resumed":
        what = "nothing" if answer is None else answer.type
        code = error_code(answer.data) if answer is not None and answer.type == "error" else None
        data["answer"] = what
        data["code"] = code
        reason = f"session.resume answered with {what}" + (f" ({code})" if code else "")
        return failed(NAME, [reason], data, []), second
    if marker is not None:
        await second.send(marker.event)
    assert second.info is None
    second.adopt(_resumed_info(info, answer.data))
    rid = track.id

    def settled() -> bool:
        resumed = second.tracker.responses.get(rid)
        done = track.finished or (resumed is not None and resumed.finished)
        quiet = second.now() - max((e.t for e in second.events), default=0.0) >= SETTLE_S
        return done and quiet

    await second.wait_until(settled, WINDOW_S)
    return _verdict(first, second, last, rid, marker, data), second


def _resumed_info(info: SessionInfo, resumed: dict[str, Any]) -> SessionInfo:
    """The session as it continues: same id and dialect, the rotated resume token."""
    token = resumed.get("resume_token")
    return replace(info, resume_token=token if isinstance(token, str) else info.resume_token)


def _verdict(
    first: ProbeConnection,
    second: ProbeConnection,
    last: int,
    rid: str,
    marker: Marker | None,
    data: dict[str, Any],
) -> CheckResult:
    seqs = second.seqs
    problems = seq_problems(last, seqs)
    counts = Counter(first.event_ids + second.event_ids)
    dup_ids = sorted(i for i, n in counts.items() if n > 1)
    dones = sum(
        1 for e in first.events + second.events if e.type == "response.done" and _rid(e.data) == rid
    )
    data.update(
        seqs_after_resume=len(seqs),
        first_seq_after_resume=seqs[0] if seqs else None,
        **{k: v[:10] for k, v in problems.items()},
        duplicate_event_ids=dup_ids[:10],
        response_done_count=dones,
    )
    reasons: list[str] = []
    if problems["gaps"]:
        reasons.append(f"lost events: seq {_ranges(problems['gaps'])} never arrived")
    if problems["repeats"]:
        reasons.append(f"repeated events: seq {_ranges(sorted(set(problems['repeats'])))} again")
    if problems["out_of_order"]:
        reasons.append(f"events out of order: seq {_ranges(problems['out_of_order'])}")
    if dup_ids:
        reasons.append(f"{len(dup_ids)} event_id(s) delivered twice")
    if not seqs:
        reasons.append("no sequenced events after the resume")
    notes: list[str] = []
    if dones > 1:
        reasons.append(f"the interrupted answer ended {dones} times")
    elif dones == 0:
        notes.append(f"the answer was still streaming {WINDOW_S:.0f} s after the resume")
    if marker is None:
        notes.append("no client event with an observable effect was accepted: dedupe not tested")
    else:
        applied = marker.count(first.events + second.events)
        data["marker_applied"] = applied
        if not data.get("marker_seen_before_drop") and applied == 1:
            notes.append(f"{marker.kind} never took effect before the drop: dedupe not tested")
        elif applied != 1:
            reasons.append(
                f"{marker.kind} re-sent with the same event_id was applied {applied} times"
            )
    if reasons:
        return failed(NAME, reasons, data, notes)
    return passed(
        NAME,
        f"resumed at seq {last}: {len(seqs)} events contiguous, none repeated; "
        f"{marker.kind if marker else 'no event'} applied once",
        data,
        notes,
    )


def _rid(data: dict[str, Any]) -> Any:
    response = data.get("response")
    return (response.get("id") if isinstance(response, dict) else None) or data.get("response_id")


def _ranges(values: list[int]) -> str:
    if not values:
        return ""
    out: list[str] = []
    start = prev = values[0]
    for value in [*values[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if value is not None:
            start = prev = value
    return ",".join(out)
