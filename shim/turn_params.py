"""The numbers turn decisions (``shim/turns.py``) run on, from the session's settings.

The overlap decision's (``shim/overlap_decision.py``): the session's
``barge_in_decision_ms`` or the server's, and its VAD's threshold and pause; and the
VAD gate's: quicker onsets while the assistant speaks (a hold costs nothing if the
speech turns out short), else the turn's own.
"""

from __future__ import annotations

from dataclasses import replace

from shim.overlap_decision import DecisionParams
from shim.session_config import ClientSessionConfig
from shim.settings import ShimSettings
from shim.vad_gate import VadParams


def decision_params(config: ClientSessionConfig, settings: ShimSettings) -> DecisionParams:
    td = config.turn
    ms = td.barge_in_decision_ms or settings.barge_in_decision_ms
    vad = td.vad or settings.vad
    return DecisionParams(decision_ms=ms, threshold=vad.threshold, pause_ms=vad.silence_duration_ms)


def gate_params(base: VadParams, settings: ShimSettings, over_assistant: bool) -> VadParams:
    """The gate's parameters: ``base`` (the session's VAD), with quicker onsets
    ``over_assistant`` (it speaks, and speech over it may interrupt)."""
    if not over_assistant:
        return base
    return replace(base, min_speech_ms=min(base.min_speech_ms, settings.hold_min_speech_ms))
