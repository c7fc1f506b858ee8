"""Check 7, fairness: N sessions at once -- does every one get served, and alike?

All N sessions open, then say the same turn at the same moment and listen. For
each: refused (and the endpoint's error code), time from the end of its speech to
the first audio of the answer, and audio throughput (ms of audio per ms of wall
time while it streams; 1.0 is real time). The probe listens until every answer
has streamed 1.5 s (or finished), or until 3 s after the first answer began: a
session with no audio by then was starved.

Verdict: ``fail`` when a session was refused or starved, when first-audio latency
max/median exceeds 2 (and by more than 500 ms), or when the slowest throughput is
below half the median; ``pass`` otherwise.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from typing import Any

from proxy.probe.client import ProbeConnection
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.speaker import Speech, Voice, nudge_if_deaf, voice_for
from proxy.probe.tracks import ResponseTrack

NAME = "fairness"
LATENCY_SPREAD = 2.0
LATENCY_SLACK_MS = 500.0
THROUGHPUT_FLOOR = 0.5
NUDGE_AFTER_S = 3.0
#: Audio each answer must have streamed before throughput is judged.
WINDOW_MS = 1500.0
#: A session without audio this long after the first answer began is starved.
STARVED_AFTER_S = 3.0


@dataclass(slots=True)
class Seat:
    index: int
    conn: ProbeConnection | None = None
    voice: Voice | None = None
    refused: str | None = None
    speech: Speech | None = None
    before: int = 0
    since: int = 0

    def answer(self) -> ResponseTrack | None:
        if self.conn is None:
            return None
        for track in self.conn.tracker.tracks(self.before):
            if track.first_audio_t is not None:
                return track
        return None


async def _seat(ctx: ProbeContext, index: int) -> Seat:
    seat = Seat(index)
    try:
        seat.conn = await ctx.open()
    except OpenFailed as exc:
        seat.refused = exc.code or str(exc)
        return seat
    seat.voice = voice_for(seat.conn, ctx.settings.chunk_ms)
    return seat


def _throughput(track: ResponseTrack) -> float:
    assert track.first_audio_t is not None and track.last_audio_t is not None
    wall_ms = (track.last_audio_t - track.first_audio_t) * 1000.0 + track.max_delta_ms
    return track.audio_ms / wall_ms if wall_ms > 0 else 0.0


def _spread(values: list[float]) -> tuple[float, float, float]:
    median = statistics.median(values)
    return min(values), median, max(values)


async def run(ctx: ProbeContext) -> CheckResult:
    seats = await asyncio.gather(*(_seat(ctx, i) for i in range(ctx.settings.sessions)))
    ctx.loaded[NAME] = sum(1 for s in seats if s.conn is not None)
    try:
        return await _measure(ctx, list(seats))
    finally:
        for seat in seats:
            if seat.voice is not None:
                await seat.voice.aclose()
        await asyncio.gather(
            *(s.conn.close() for s in seats if s.conn is not None), return_exceptions=True
        )


async def _measure(ctx: ProbeContext, seats: list[Seat]) -> CheckResult:
    live = [s for s in seats if s.conn is not None and s.voice is not None]
    for seat in live:
        assert seat.conn is not None and seat.voice is not None
        seat.before = len(seat.conn.tracker.order)
        seat.since = len(seat.conn.events)
        seat.speech = seat.voice.say(ctx.stimulus.turn)
    ends = [await s.speech.end() for s in live if s.speech is not None]
    loop = asyncio.get_running_loop()
    spoke = max(ends, default=loop.time())
    deadline = spoke + ctx.settings.response_timeout_s

    def over() -> bool:
        nonlocal deadline
        answers = [s.answer() for s in live]
        firsts = [a.first_audio_t for a in answers if a is not None and a.first_audio_t]
        if firsts:
            # Everyone had STARVED_AFTER_S since the first answer began to start theirs.
            deadline = min(deadline, min(firsts) + STARVED_AFTER_S)
        enough = [a for a in answers if a is not None and (a.finished or a.audio_ms >= WINDOW_MS)]
        return len(enough) == len(live) or loop.time() >= deadline

    nudged: set[int] = set()
    while not over():
        await asyncio.sleep(0.05)
        if loop.time() < spoke + NUDGE_AFTER_S:
            continue
        for seat in live:
            if seat.index not in nudged and seat.conn is not None:
                nudged.add(seat.index)
                await nudge_if_deaf(seat.conn, seat.since)
    return _verdict(seats)


def _verdict(seats: list[Seat]) -> CheckResult:
    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    rates: list[float] = []
    refused: list[str] = []
    starved: list[int] = []
    for seat in seats:
        row: dict[str, Any] = {"session": seat.index}
        track = seat.answer()
        if seat.refused is not None:
            row["refused"] = seat.refused
            refused.append(seat.refused)
        elif track is None or track.first_audio_t is None or seat.speech is None:
            row["starved"] = True
            starved.append(seat.index)
        else:
            end = seat.speech.finished.result()
            latency = (track.first_audio_t - end) * 1000.0
            rate = _throughput(track)
            row.update(
                first_audio_ms=round(latency),
                audio_ms=round(track.audio_ms),
                throughput=round(rate, 2),
                finished=track.finished,
            )
            latencies.append(latency)
            rates.append(rate)
        rows.append(row)
    data: dict[str, Any] = {"sessions": len(seats), "per_session": rows}
    reasons: list[str] = []
    if refused:
        codes = ", ".join(sorted(set(refused)))
        reasons.append(f"{len(refused)} of {len(seats)} sessions refused ({codes})")
    if starved:
        reasons.append(f"{len(starved)} of {len(seats)} sessions starved (no audio)")
    summary = ""
    if latencies:
        lo, median, hi = _spread(latencies)
        t_lo, t_median, t_hi = _spread(rates)
        data.update(
            first_audio_ms={"min": round(lo), "median": round(median), "max": round(hi)},
            throughput={"min": round(t_lo, 2), "median": round(t_median, 2), "max": round(t_hi, 2)},
            latency_spread=round(hi / median, 2) if median > 0 else None,
            throughput_spread=round(t_hi / t_median, 2) if t_median > 0 else None,
        )
        if median > 0 and hi / median > LATENCY_SPREAD and hi - median > LATENCY_SLACK_MS:
            reasons.append(f"first audio {hi:.0f} ms for the slowest vs {median:.0f} ms median")
        if t_median > 0 and t_lo / t_median < THROUGHPUT_FLOOR:
            reasons.append(f"throughput {t_lo:.2f}x for the slowest vs {t_median:.2f}x median")
        summary = (
            f"{len(latencies)} sessions: first audio {median:.0f} ms median, {hi:.0f} max "
            f"({hi / median if median > 0 else 0:.2f}x); throughput {t_median:.2f}x median, "
            f"{t_lo:.2f}x min (fail above {LATENCY_SPREAD:.0f}x and +{LATENCY_SLACK_MS:.0f} ms "
            f"median latency, or below {THROUGHPUT_FLOOR}x median throughput)"
        )
    if reasons:
        return failed(NAME, reasons, data, [])
    if not latencies:
        return CheckResult(NAME, "error", "no session could be opened", data)
    return passed(NAME, summary, data, [])
