"""Check 4, truncation: after the user cuts in, does the conversation keep only what was heard?

The probe plays the role of a client whose playback runs behind the network (a
jitter buffer): the endpoint has finished sending its answer when the user barges
in, and the player had sounded only half of it. The client stops playback and
tells the endpoint where: ``conversation.item.truncate {item_id, content_index,
audio_end_ms}`` (GA; vLLM-Omni answers ``conversation.item.truncated`` and cuts
the item's transcript with its ``audio_text_marks``), or, where the
endpoint declares truncate unsupported but playback acks supported,
``playback.ack {played_ms, committed_ms}``. Then it reads the item back
(``conversation.item.retrieve``).

Checked: the truncation is acknowledged at the point asked, never beyond the audio
received; the kept transcript is a prefix of what was sent and no longer than the
text that went with the audio heard; the transcript ``response.done`` reported is
not longer than the text sent; the finished response is not ended a second time.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable
from typing import Any

from proxy.probe.client import Event, ProbeConnection, error_event_id
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.speaker import converse, voice_for
from proxy.probe.tracks import ResponseTrack, item_transcript
from shim.wire import error_code

NAME = "truncation"
QUIET_S = 1.5
ANSWER_S = 2.0


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def chars_heard(track: ResponseTrack, audio_end_ms: int) -> float:
    """Text that went with the first ``audio_end_ms`` of audio.

    From the endpoint's own (audio_end_ms, text_chars) marks where it publishes
    them (vLLM-Omni ``audio_text_marks``), else in proportion to the audio.
    """
    total = len(track.transcript)
    if track.marks:
        before = [chars for end, chars in track.marks if end <= audio_end_ms]
        after = [chars for end, chars in track.marks if end > audio_end_ms]
        return float(after[0] if after else before[-1] if before else 0)
    if track.audio_ms <= 0:
        return float(total)
    return total * min(1.0, audio_end_ms / track.audio_ms)


def _for(event_id: str, item_id: str, *kinds: str) -> Callable[[Event], bool]:
    def match(event: Event) -> bool:
        if event.type == "error":
            return error_event_id(event.data) in (event_id, None)
        return event.type in kinds and event.data.get("item_id", item_id) == item_id

    return match


async def _finished_answer(ctx: ProbeContext, conn: ProbeConnection) -> ResponseTrack | None:
    voice = voice_for(conn, ctx.settings.chunk_ms)
    try:
        _, track = await converse(
            conn, voice, ctx.stimulus.turn, timeout_s=ctx.settings.response_timeout_s
        )
        if track is None:
            return None

        def over() -> bool:
            last = track.last_audio_t or 0.0
            return track.finished or conn.now() - last >= QUIET_S

        await conn.wait_until(over, 30.0)
        return track
    finally:
        await voice.aclose()


async def run(ctx: ProbeContext) -> CheckResult:
    if ctx.dialect == "turn":
        return CheckResult(
            NAME,
            "unsupported",
            "turn-based dialect: no conversation.item.truncate, no playback ack",
        )
    caps = ctx.capabilities
    use_ack = caps.get("supports_audio_truncate") is False
    if use_ack and caps.get("supports_playback_ack") is not True:
        return CheckResult(
            NAME,
            "unsupported",
            "declares neither supports_audio_truncate nor supports_playback_ack",
        )
    try:
        conn = await ctx.open()
    except OpenFailed as exc:
        return CheckResult(NAME, "error", f"no session: {exc}")
    try:
        track = await _finished_answer(ctx, conn)
        if track is None:
            return CheckResult(NAME, "error", "no answer to the probe's turn")
        return await _truncate(conn, track, use_ack)
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


async def _truncate(conn: ProbeConnection, track: ResponseTrack, use_ack: bool) -> CheckResult:
    received = int(track.audio_ms)
    data: dict[str, Any] = {"method": "playback.ack" if use_ack else "conversation.item.truncate"}
    data["response"] = track.summary()
    if received < 400 or track.item_id is None:
        why = "no item_id on its audio" if track.item_id is None else f"only {received} ms of audio"
        return CheckResult(NAME, "error", f"cannot truncate the answer: {why}", data)
    item_id = track.item_id
    played = received // 2 // 10 * 10
    data.update(item_id=item_id, audio_received_ms=received, played_ms=played)
    done_before = track.done_count
    start = len(conn.events)
    event_id = f"probe_{uuid.uuid4().hex[:16]}"
    if use_ack:
        await conn.send(
            {
                "type": "playback.ack",
                "event_id": event_id,
                "played_ms": played,
                "committed_ms": played,
                "response_id": track.id,
                "item_id": item_id,
            }
        )
        answer = await conn.wait_for(
            _for(event_id, item_id, "playback.acknowledged"), ANSWER_S, since=start
        )
    else:
        await conn.send(
            {
                "type": "conversation.item.truncate",
                "event_id": event_id,
                "item_id": item_id,
                "content_index": 0,
                "audio_end_ms": played,
            }
        )
        answer = await conn.wait_for(
            _for(event_id, item_id, "conversation.item.truncated"), ANSWER_S, since=start
        )
    kept = await _retrieve(conn, item_id)
    await conn.wait_until(lambda: False, 0.3)  # anything else the truncation set off
    return _verdict(track, answer, kept, played, done_before, use_ack, data)


async def _retrieve(conn: ProbeConnection, item_id: str) -> str | None:
    event_id = f"probe_{uuid.uuid4().hex[:16]}"
    start = len(conn.events)
    await conn.send(
        {"type": "conversation.item.retrieve", "event_id": event_id, "item_id": item_id}
    )

    def match(event: Event) -> bool:
        if event.type == "error":
            return error_event_id(event.data) in (event_id, None)
        item = event.data.get("item")
        return (
            event.type == "conversation.item.retrieved"
            and isinstance(item, dict)
            and (item.get("id") == item_id)
        )

    found = await conn.wait_for(match, ANSWER_S, since=start)
    if found is None or found.type == "error":
        return None
    return item_transcript(found.data.get("item")) or ""


def _acknowledged(
    answer: Event | None, track: ResponseTrack, played: int, use_ack: bool, data: dict[str, Any]
) -> list[str]:
    """Problems with the endpoint's answer to the truncate (or ack) itself."""
    asked = "playback.ack" if use_ack else "truncate"
    if answer is None:
        return [f"no answer to {asked} within {ANSWER_S:.0f} s"]
    if answer.type == "error":
        data["error"] = error_code(answer.data)
        return [f"{asked} refused: {error_code(answer.data)}"]
    end = answer.data.get("audio_end_ms")
    if use_ack:
        event = answer.data.get("event")
        end = (event if isinstance(event, dict) else answer.data).get("committed_ms")
    data["acknowledged_ms"] = end
    if not isinstance(end, int | float):
        return [f"{answer.type} carries no audio position"]
    if end > track.audio_ms + 1:
        return [f"acknowledged {end} ms, beyond the {track.audio_ms:.0f} ms of audio received"]
    if abs(end - played) > 1:
        return [f"truncated at {end} ms, asked {played} ms"]
    return []


def _transcripts(track: ResponseTrack, kept: str | None, played: int) -> list[str]:
    """Problems with what the endpoint keeps (and reported) as the answer's text."""
    sent = track.transcript
    allowed = chars_heard(track, played) + max(3, track.max_text_delta)
    problems: list[str] = []
    if kept is not None and not _norm(sent).startswith(_norm(kept)):
        problems.append(f"kept transcript {kept[:40]!r} is not what was sent")
    elif kept is not None and len(_norm(kept)) > allowed:
        problems.append(
            f"transcript not cut: {len(kept)} of {len(sent)} chars kept for {played} of "
            f"{track.audio_ms:.0f} ms heard (at most {allowed:.0f})"
        )
    done = track.done_transcript
    if done is not None and len(_norm(done)) > len(_norm(sent)):
        problems.append("the response.done transcript is longer than the text sent")
    return problems


def _verdict(
    track: ResponseTrack,
    answer: Event | None,
    kept: str | None,
    played: int,
    done_before: int,
    use_ack: bool,
    data: dict[str, Any],
) -> CheckResult:
    data.update(
        transcript_sent_chars=len(track.transcript),
        transcript_heard_chars=round(chars_heard(track, played)),
        transcript_kept_chars=None if kept is None else len(kept),
    )
    reasons = _acknowledged(answer, track, played, use_ack, data)
    reasons += _transcripts(track, kept, played)
    if track.done_count > done_before:
        reasons.append(f"the finished response was ended again ({track.done_count} response.done)")
    notes = []
    if kept is None:
        notes.append(
            "conversation.item.retrieve unsupported: the kept transcript is not observable"
        )
    if use_ack and reasons:
        # It declared no truncate, and acks did not cut the history either: honest, not a lie.
        summary = "declares supports_audio_truncate=false; playback.ack did not truncate: "
        return CheckResult(NAME, "unsupported", summary + "; ".join(reasons), data, notes)
    if reasons:
        return failed(NAME, reasons, data, notes)
    asked = "playback.ack" if use_ack else "truncate"
    cut = "" if kept is None else f"; kept {len(kept)} of {len(track.transcript)} chars"
    summary = f"{asked} at {played} of {track.audio_ms:.0f} ms acknowledged{cut}"
    return passed(NAME, summary, data, notes)
