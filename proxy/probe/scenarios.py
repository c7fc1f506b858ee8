"""Spoken scenarios more than one check reads.

``overlap``: the probe says its turn, waits for the answer's audio, lets
``overlap_lead_ms`` of it arrive, then talks over it with its second utterance
and keeps listening until the interrupted response's audio has been quiet for a
while. ``full_duplex_input`` reads how the endpoint reacted to that speech,
``barge_in`` how fast the audio stopped and how the response ended.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from proxy.probe.client import Event, ProbeConnection
from proxy.probe.context import ProbeContext
from proxy.probe.handshake import OpenFailed
from proxy.probe.speaker import Voice, converse, voice_for
from proxy.probe.tracks import ResponseTrack

#: Quiet needed on the interrupted response before the probe stops listening.
SETTLE_S = 0.8
#: Longest the probe listens after it starts talking over the assistant.
MAX_OBSERVE_S = 15.0


@dataclass(slots=True)
class OverlapTrace:
    error: str | None
    dialect: str | None = None
    capabilities: dict[str, object] | None = None
    events: list[Event] | None = None
    response: ResponseTrack | None = None
    turn_end_t: float = 0.0
    onset_t: float = 0.0
    overlap_end_t: float = 0.0
    observed_until: float = 0.0
    probe_chunk_ms: int = 40


def _quiet_for(track: ResponseTrack, now: float, seconds: float) -> bool:
    last = track.last_audio_t if track.last_audio_t is not None else 0.0
    return now - last >= seconds


async def _run(ctx: ProbeContext) -> OverlapTrace:
    try:
        conn = await ctx.open()
    except OpenFailed as exc:
        return OverlapTrace(error=f"no session: {exc}")
    voice = voice_for(conn, ctx.settings.chunk_ms)
    try:
        return await _converse_and_interrupt(ctx, conn, voice)
    finally:
        await voice.aclose()
        with contextlib.suppress(Exception):
            await conn.close()


async def _converse_and_interrupt(
    ctx: ProbeContext, conn: ProbeConnection, voice: Voice
) -> OverlapTrace:
    assert conn.info is not None
    trace = OverlapTrace(
        error=None,
        dialect=conn.info.dialect,
        capabilities=conn.info.capabilities,
        probe_chunk_ms=ctx.settings.chunk_ms,
    )
    speech, track = await converse(
        conn, voice, ctx.stimulus.turn, timeout_s=ctx.settings.response_timeout_s
    )
    trace.turn_end_t = await speech.end()
    if track is None:
        trace.error = (
            f"no answer to the probe's turn within {ctx.settings.response_timeout_s:.0f} s"
        )
        trace.events = conn.events
        return trace
    trace.response = track
    lead_s = ctx.settings.overlap_lead_ms / 1000.0
    await conn.wait_until(
        lambda: (
            track.audio_ms >= ctx.settings.overlap_lead_ms
            or conn.now() - (track.first_audio_t or 0.0) >= lead_s
        ),
        5.0,
    )
    overlap = voice.say(ctx.stimulus.overlap)
    trace.onset_t = await overlap.onset()
    trace.overlap_end_t = trace.onset_t + overlap.duration_s

    def settled() -> bool:
        now = conn.now()
        return now >= trace.overlap_end_t and _quiet_for(track, now, SETTLE_S)

    await conn.wait_until(settled, MAX_OBSERVE_S)
    trace.observed_until = conn.now()
    trace.events = conn.events
    return trace


async def overlap_once(ctx: ProbeContext) -> OverlapTrace:
    """The scenario again, on a fresh session (not shared)."""
    return await _run(ctx)


async def overlap_trace(ctx: ProbeContext) -> OverlapTrace:
    trace: OverlapTrace = await ctx.shared("overlap", lambda: _run(ctx))
    return trace
