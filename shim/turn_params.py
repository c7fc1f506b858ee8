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


class TurnParams:
    """One session's ``decision_params`` and ``gate_params``, made again only when what
    they are made of changes (a ``session.update``): they are read every VAD window.
    All they read is frozen, so the same objects give the same values."""

    __slots__ = ("_config", "_decision", "_gate", "_gate_of", "_settings")

    def __init__(self) -> None:
        self._config: ClientSessionConfig | None = None
        self._settings: ShimSettings | None = None
        self._decision: DecisionParams | None = None
        self._gate_of: tuple[VadParams, ShimSettings, bool] | None = None
        self._gate: VadParams | None = None

    def decision(self, config: ClientSessionConfig, settings: ShimSettings) -> DecisionParams:
        if self._decision is None or config is not self._config or settings is not self._settings:
            self._config, self._settings = config, settings
            self._decision = decision_params(config, settings)
        return self._decision

    def gate(self, base: VadParams, settings: ShimSettings, over_assistant: bool) -> VadParams:
        of = self._gate_of
        if of is None or of[0] is not base or of[1] is not settings or of[2] != over_assistant:
            self._gate_of = (base, settings, over_assistant)
            self._gate = gate_params(base, settings, over_assistant)
        assert self._gate is not None
        return self._gate
