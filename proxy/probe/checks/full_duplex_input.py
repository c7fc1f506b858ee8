"""Check 2, full_duplex_input: does the endpoint hear the user while it speaks?

From the shared ``overlap`` scenario: the probe talks over the assistant's answer.
A full-duplex endpoint keeps taking that audio and shows it heard it while it was
still speaking -- ``input_audio_buffer.speech_started``, vLLM-Omni's
``overlap.decision``, a committed user item, a barge-in. A
half-duplex one ignores input while it talks (or, turn-based, until its
generation ends) and reacts, if at all, only afterwards.

Verdict: ``pass`` when a reaction arrives between the probe's speech onset and
the end of the assistant's audio (+300 ms), and no append was refused; ``fail``
otherwise; ``error`` when the scenario could not be set up.
"""

from __future__ import annotations

from typing import Any

from proxy.probe.client import Event
from proxy.probe.context import ProbeContext
from proxy.probe.result import CheckResult, failed, passed
from proxy.probe.scenarios import OverlapTrace, overlap_trace
from shim.wire import error_code

NAME = "full_duplex_input"
GRACE_S = 0.3
# An endpoint that holds its audio while it decides whether speech over it is a
# barge-in goes quiet at once and says so only at its decision, cancelling the
# response then (docs/protocol.md, "Overlap protocol": up to 0.75 s by default).
DECIDED_GRACE_S = 1.0
REACTIONS = frozenset(
    {
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "overlap.decision",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.completed",
        "output_audio_buffer.cleared",
    }
)


def speaking_until(trace: OverlapTrace) -> float:
    """When the assistant's interrupted answer stops sounding (real-time playback)."""
    track = trace.response
    assert track is not None and track.first_audio_t is not None
    last = track.last_audio_t or track.first_audio_t
    return max(last, track.first_audio_t + track.audio_ms / 1000.0)


def is_reaction(event: Event, response_id: str) -> bool:
    if event.type in REACTIONS:
        return True
    data = event.data
    if event.type in ("conversation.item.added", "conversation.item.created"):
        item = data.get("item")
        return isinstance(item, dict) and item.get("role") == "user"
    if event.type == "response.done":
        response = data.get("response")
        response = response if isinstance(response, dict) else {}
        rid = response.get("id") or data.get("response_id")
        return rid == response_id and response.get("status") in ("cancelled", "incomplete")
    return False


def analyse(trace: OverlapTrace) -> CheckResult:
    if trace.error is not None or trace.response is None or trace.events is None:
        return CheckResult(NAME, "error", trace.error or "overlap scenario did not run")
    track = trace.response
    until = speaking_until(trace)
    data: dict[str, Any] = {
        "dialect": trace.dialect,
        "overlap_speech_ms": round((trace.overlap_end_t - trace.onset_t) * 1000),
        "assistant_audio_after_onset_ms": round((until - trace.onset_t) * 1000),
        "response": track.summary(),
    }
    if until < trace.onset_t:
        # Over before the probe spoke: nothing to learn. (Audio that stops right
        # after the onset is not this: that is how a quick barge-in looks.)
        return CheckResult(
            NAME,
            "error",
            f"the answer ({track.audio_ms:.0f} ms of audio) ended before the probe spoke over it",
            data,
        )
    after = [e for e in trace.events if e.t >= trace.onset_t]
    reactions = [e for e in after if is_reaction(e, track.id)]
    cut = any(e.type == "response.done" for e in reactions)
    in_time = [e for e in reactions if e.t <= until + (DECIDED_GRACE_S if cut else GRACE_S)]
    refused = [e for e in after if e.type == "error" and e.t <= trace.overlap_end_t + 0.5]
    data["reactions"] = [
        {"type": e.type, "after_onset_ms": round((e.t - trace.onset_t) * 1000)}
        for e in reactions[:8]
    ]
    data["refused"] = [error_code(e.data) for e in refused]
    if refused:
        codes = ", ".join(sorted({str(error_code(e.data)) for e in refused}))
        return failed(NAME, [f"refused audio while speaking ({codes})"], data, [])
    if in_time:
        first = in_time[0]
        ms = round((first.t - trace.onset_t) * 1000)
        return passed(
            NAME,
            f"heard the user while speaking: {first.type} {ms} ms after speech onset "
            f"(must come before its own audio ends + {GRACE_S * 1000:.0f} ms)",
            data,
            [],
        )
    spoken = data["overlap_speech_ms"]
    talking = data["assistant_audio_after_onset_ms"]
    reasons = [f"no reaction to {spoken} ms of speech during {talking} ms of its own audio"]
    if reactions:
        late = round((reactions[0].t - until) * 1000)
        reasons.append(f"reacted only {late} ms after it stopped speaking ({reactions[0].type})")
    if trace.dialect == "turn":
        reasons.append("turn-based: input is not heard during a generation")
    return failed(NAME, reasons, data, [])


async def run(ctx: ProbeContext) -> CheckResult:
    return analyse(await overlap_trace(ctx))
