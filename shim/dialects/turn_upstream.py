"""``duplex_emulated``: the turn-based upstream's events, as the client sees them.

The upstream answers a turn with ``response.output_audio.delta`` (its rate named or
24 kHz), ``transcription.delta`` / ``.done`` (the assistant's text) and
``response.output_audio.done``, or an ``error`` (``shim/dialects/turn_wire.py``). Each
is turned into the GA events of the response in progress; a response that completes
with a turn waiting starts that turn's answer (``shim/dialects/turn_answer.py``).
"""

from __future__ import annotations

from typing import Any, Protocol

from shim.actions import Action, SendClient
from shim.audio import AudioError
from shim.dialects import turn_answer, turn_wire
from shim.dialects.turn_answer import AnswerHost
from shim.dialects.turn_refusals import Refusals
from shim.echo import EchoSuppressor
from shim.output import AssistantOutput
from shim.overlap import OverlapMachine
from shim.session_config import ClientSessionConfig
from shim.wire import error_code

DEFAULT_OUTPUT_RATE = 24000


class UpstreamHost(AnswerHost, Protocol):
    """What the upstream's events need of the session (``turn_based.py``)."""

    config: ClientSessionConfig
    refusals: Refusals
    output: AssistantOutput
    overlap: OverlapMachine
    echo: EchoSuppressor | None

    def err(
        self, code: str, message: str, ev: dict[str, Any] | None = None, param: str | None = None
    ) -> SendClient: ...

    def finish_response(
        self,
        now: float,
        status: str,
        reason: str | None,
        truncate_at: int | None = None,
        announce: bool = True,
    ) -> list[Action]: ...


def audio(s: UpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    resp = s.response
    data = ev.get("audio", ev.get("delta"))
    if resp is None or not s.live() or not isinstance(data, str):
        return []
    rate = ev.get("sample_rate_hz")
    rate = rate if isinstance(rate, int) and rate > 0 else DEFAULT_OUTPUT_RATE
    try:
        samples = s.assistant_audio.decode(data, rate)
    except AudioError as exc:
        return [s.err("upstream_error", f"upstream sent undecodable audio: {exc}")]
    fmt = s.config.output_format
    wrap = turn_wire.delta_for(resp.response_id, resp.item_id, fmt, s.refusals.native)
    action = s.assistant_audio.convert(samples, rate, fmt, s.echo is not None, wrap)
    return s.output.audio(action, now) if action is not None else []


def transcription_delta(s: UpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    resp = s.response
    if resp is None or not s.live():
        return []
    delta = ev["delta"] if isinstance(ev.get("delta"), str) else ""
    event = turn_wire.transcript_delta(resp.response_id, resp.item_id, delta)
    return s.output.text(SendClient(event), delta, s.config.output_format.rate_hz)


def transcription_done(s: UpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    if s.live() and isinstance(ev.get("text"), str):
        s.final_text = ev["text"]
    return []


def audio_done(s: UpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    live = s.live()
    s.upstream_busy = False
    return complete(s, now) if live else []


def complete(s: UpstreamHost, now: float) -> list[Action]:
    resp = s.response
    assert resp is not None
    rid, aid = resp.response_id, resp.item_id
    tail: list[Action] = []
    out_fmt, native = s.config.output_format, s.refusals.native
    rest = s.assistant_audio.flush(out_fmt, turn_wire.delta_for(rid, aid, out_fmt, native))
    if rest is not None:
        tail += s.output.audio(rest, now)
    closing = s.finish_response(now, status="completed", reason=None)
    resp.cancelled = False
    resp.upstream_done = True
    if s.overlap.episode is not None:
        resp.held.extend(closing)
        return tail
    out = tail + closing
    td = s.config.turn  # push-to-talk: a waiting turn only if its commit asked
    if s.pending and ((td.vad is not None and td.create_response) or s.pending[0].respond):
        out += turn_answer.start_response(s, now)
    return out


def error(s: UpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    live = s.live()
    code = error_code(ev) or "upstream_error"
    out: list[Action] = [s.err(code, f"upstream: {turn_wire.error_message(ev)}")]
    if live:
        s.upstream_busy = False
        out += s.finish_response(now, status="failed", reason=str(code))
    return out
