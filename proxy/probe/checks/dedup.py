"""Check 6, dedup: after a reconnect, client events apply once and server events arrive once.

A client that loses its connection cannot know which of its last events arrived,
so after ``session.resume`` it sends them again with the same ``event_id``; the
endpoint must drop those it already applied (``docs/probe.md``). The probe, on one
session:

1. sends ``conversation.item.create`` (a user text item carrying a nonce) and
   ``response.create``, each with an ``event_id``;
2. speaks its turn as ``input_audio_buffer.append`` events that all carry an
   ``event_id``, keeps streaming silence the same way, and waits for the answer;
3. drops the connection (no close frame) while the answer streams, resumes the
   session, and re-sends every one of those events, ids unchanged, at once;
4. listens for ``WINDOW_S``, streaming fresh silence.

Counted: items carrying the nonce over both connections (must be 1; a replayed
event, same ``server_event_seq``, counts once); among the events the endpoint
produced after the re-send, user turns heard (``input_audio_buffer.speech_started``:
re-applied speech is a new turn), ``response.created`` (a re-applied request is
answered again) and ``error`` events naming a re-sent ``event_id`` (it was processed
again) -- all must be 0. The server events after the resume point must continue the
seq without a gap, a repeat or a step back, and no ``event_id`` may arrive twice.

Verdict: ``pass`` when all hold; ``fail`` naming each that does not; ``unsupported``
for an endpoint without resume (turn-based, no ``resume_token``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

from proxy.probe.checks.resume import seq_problems
from proxy.probe.client import Event, ProbeConnection, error_event_id
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import ResumeRequest, resume_session
from proxy.probe.marker import _items_with
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.resumable import run_resumable
from proxy.probe.speaker import Mic, converse
from shim.wire import error_code

NAME = "dedup"
DROP_AFTER_MS = 400
GAP_S = 0.3
WINDOW_S = 4.0
ANSWER_WAIT_S = 1.5


def _tagged(kind: str, **body: Any) -> dict[str, Any]:
    return {"type": kind, "event_id": f"probe_dd_{uuid.uuid4().hex[:12]}", **body}


async def run(ctx: ProbeContext) -> CheckResult:
    return await run_resumable(ctx, NAME, _scenario, honour_declared=False)


async def _requests(first: ProbeConnection, nonce: str) -> list[dict[str, Any]]:
    """The item and the response request; waits out a response they start."""
    content = [{"type": "input_text", "text": f"probe dedup {nonce}"}]
    item = _tagged(
        "conversation.item.create", item={"type": "message", "role": "user", "content": content}
    )
    response = _tagged("response.create")
    before = len(first.tracker.order)
    for event in (item, response):
        start = len(first.events)
        await first.send(event)
        await first.wait_for(lambda e: e.type != "session.event_ack", ANSWER_WAIT_S, since=start)
    await first.wait_until(lambda: False, 0.3)
    for track in first.tracker.tracks(before):
        await first.wait_until(lambda t=track: t.finished, 15.0)  # type: ignore[misc]
    return [item, response]


async def _scenario(
    ctx: ProbeContext, first: ProbeConnection
) -> tuple[CheckResult, ProbeConnection | None]:
    info = first.info
    assert info is not None and info.resume_token is not None and info.session_id is not None
    nonce = uuid.uuid4().hex[:12]
    requests = await _requests(first, nonce)
    mic = Mic(first, ctx.settings.chunk_ms, tag=f"probe_dd_{nonce}_")
    try:
        _, track = await converse(
            first, mic, ctx.stimulus.turn, timeout_s=ctx.settings.response_timeout_s
        )
        if track is None:
            return CheckResult(NAME, "error", "no answer to the probe's turn"), None
        await first.wait_until(lambda: track.audio_ms >= DROP_AFTER_MS or track.finished, 5.0)
    finally:
        await mic.aclose()
    resend = [*requests, *mic.sent]
    first.drop()
    await first.wait_until(first.closed.is_set, 2.0)
    last = first.last_seq
    await asyncio.sleep(GAP_S)
    request = ResumeRequest(info.session_id, info.resume_token, last, info.url)
    asked = asyncio.get_running_loop().time()
    second, answer = await resume_session(ctx.http, request)
    data: dict[str, Any] = {"last_seq_before_drop": last, "resent_events": len(resend)}
    if answer is not None:
        data["resume_ms"] = round((answer.t - asked) * 1000)
    if answer is None or answer.type != "session.resumed":
        what = "nothing" if answer is None else answer.type
        data["answer"] = what
        return failed(NAME, [f"session.resume answered with {what}"], data, []), second
    second.adopt(info)
    resumed_at = len(second.events)
    for event in resend:
        await second.send(event)
    fresh = Mic(second, ctx.settings.chunk_ms)
    try:
        await asyncio.sleep(WINDOW_S)
    finally:
        await fresh.aclose()
    resent_ids = {str(e["event_id"]) for e in resend}
    return _verdict(first, second, last, nonce, resent_ids, resumed_at, data), second


def merged(first: list[Event], second: list[Event]) -> list[Event]:
    """Both connections' events; a replayed event (same seq) is counted once."""
    seen = {e.data.get("server_event_seq") for e in first} - {None}
    return [*first, *(e for e in second if e.data.get("server_event_seq") not in seen)]


def _after_resend(first: ProbeConnection, second: ProbeConnection, at: int) -> list[Event]:
    """Events the endpoint produced after the re-send (not replays of earlier ones)."""
    before = max(first.seqs, default=0)
    out: list[Event] = []
    for event in second.events[at:]:
        seq = event.data.get("server_event_seq")
        if not isinstance(seq, int) or seq > before:
            out.append(event)
    return out


def _verdict(
    first: ProbeConnection,
    second: ProbeConnection,
    last: int,
    nonce: str,
    resent_ids: set[str],
    resumed_at: int,
    data: dict[str, Any],
) -> CheckResult:
    problems = seq_problems(last, second.seqs)
    dup_ids = sorted(i for i, n in Counter(first.event_ids + second.event_ids).items() if n > 1)
    items = len(_items_with(merged(first.events, second.events), nonce))
    later = _after_resend(first, second, resumed_at)
    turns = sum(1 for e in later if e.type == "input_audio_buffer.speech_started")
    answered = sum(1 for e in later if e.type == "response.created")
    rejected = [e for e in later if e.type == "error" and error_event_id(e.data)]
    reprocessed = sorted({str(error_event_id(e.data)) for e in rejected} & resent_ids)
    data.update(
        seqs_after_resume=len(second.seqs),
        **{k: v[:10] for k, v in problems.items()},
        duplicate_event_ids=dup_ids[:10],
        items_created=items,
        user_turns_after_resend=turns,
        responses_after_resend=answered,
        responses_before_drop=sum(1 for e in first.events if e.type == "response.created"),
        resent_ids_answered_with_error=reprocessed[:10],
        errors_after_resume=sorted({str(error_code(e.data)) for e in rejected}),
    )
    reasons: list[str] = []
    notes: list[str] = []
    if items == 0:
        notes.append("conversation.item.create had no visible effect (no item): not tested")
    elif items > 1:
        reasons.append(f"conversation.item.create re-sent with its event_id: {items} items, not 1")
    if turns:
        reasons.append(
            f"the re-sent input_audio_buffer.append events were heard again: {turns} new "
            "user turn(s) (speech_started) after the re-send, not 0"
        )
    if answered:
        reasons.append(
            f"{answered} response(s) started after the re-send, not 0: a re-sent request "
            "(audio or response.create) was answered again"
        )
    if reprocessed:
        reasons.append(f"{len(reprocessed)} re-sent event(s) processed again (answered with error)")
    for key, what in (("gaps", "lost"), ("repeats", "repeated"), ("out_of_order", "out of order")):
        if problems[key]:
            reasons.append(f"server events after the resume {what}: seq {problems[key][:5]}")
    if dup_ids:
        reasons.append(f"{len(dup_ids)} server event_id(s) delivered twice")
    if not second.seqs:
        reasons.append("no sequenced server events after the resume")
    if reasons:
        return failed(NAME, reasons, data, notes)
    return passed(
        NAME,
        f"{len(resent_ids)} events re-sent after resuming at seq {last} (item, response.create, "
        f"{len(resent_ids) - 2} appends): {items} item(s), no new turn or response; "
        f"{len(second.seqs)} server events after the resume point, each once, in order",
        data,
        notes,
    )
