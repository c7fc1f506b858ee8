"""What turn decisions (``shim/turns.py``) need from the session, and the dialect's moves.

The emulated session (``shim/session.py``) is the host; the dialects supply
``commit_turn`` and ``cancel_response`` in their own way. What turn decisions tell the
client of an overlap is said here too (``told_started``, ``told_resumed``).
"""

from __future__ import annotations

from typing import Protocol

from shim import wire
from shim.actions import Action, SendClient
from shim.input_history import InputHistory
from shim.output import AssistantOutput
from shim.overlap import Overlap, OverlapMachine, Step
from shim.overlap_directness import SPAN
from shim.overlap_evidence import Float32Array, OverlapEvidence
from shim.session_config import ClientSessionConfig
from shim.settings import ShimSettings
from shim.vad_gate import VadGate


class TurnHost(Protocol):
    """What turn decisions need from the session, and the dialect's moves."""

    config: ClientSessionConfig
    settings: ShimSettings
    gate: VadGate
    overlap: OverlapMachine
    output: AssistantOutput
    evidence: OverlapEvidence
    history: InputHistory
    announce_turns: bool

    def new_id(self, prefix: str) -> str: ...

    def far_for(self, start: int, end: int, heard: bool = False) -> Float32Array | None: ...

    def release_output(self, now: float) -> list[Action]: ...

    def overlap_ended(self, step: Step, now: float) -> list[Action]: ...

    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]: ...

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]: ...


def far_at(host: TurnHost, end_sample: int) -> Float32Array | None:
    """The assistant's audio the microphone's window up to VAD sample ``end_sample`` may
    carry (its far end, for the overlap evidence)."""
    return host.far_for(*host.evidence.mic_window(end_sample))


def echo_span(host: TurnHost, end_sample: int) -> Float32Array | None:
    """The echo expected in the microphone's last ``SPAN`` up to the VAD's window."""
    hi = host.evidence.mic_window(end_sample)[1]
    return host.far_for(hi - SPAN, hi, heard=True)


def told_started(host: TurnHost, step: Step) -> list[Action]:
    """speech_started for the overlap's speech, if the table says now is the time.

    Where the upstream takes turns itself, only a barge-in is the proxy's to tell.
    """
    if not step.tell_started or (step.outcome is Overlap.TURN and not host.announce_turns):
        return []
    return [SendClient(wire.speech_started(step.episode.item_id, step.episode.onset_ms))]


def told_resumed(host: TurnHost, step: Step, reason: str) -> list[Action]:
    """output_resumed for an overlap released, if the table and the client ask for it."""
    if not (step.tell_resumed and host.config.turn.overlap_events):
        return []
    resp = host.output.response
    rid, iid = (resp.response_id, resp.item_id) if resp is not None else (None, None)
    return [SendClient(wire.output_resumed(rid, iid, reason))]


def told_paused(host: TurnHost, step: Step, onset_ms: int) -> list[Action]:
    """output_paused for an overlap begun, if the table and the client ask for it."""
    if not (step.tell_paused and host.config.turn.overlap_events):
        return []
    resp = host.output.response
    rid, iid = (resp.response_id, resp.item_id) if resp is not None else (None, None)
    return [SendClient(wire.output_paused(rid, iid, "user_speech_suspected", onset_ms))]
