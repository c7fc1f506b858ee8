"""The emulated session's parts, and what its turn decisions need of it.

One part per job: the VAD gate (``shim/vad_gate.py``), the input history
(``shim/input_history.py``), the barge-in table (``shim/overlap.py``), the playback
ledger (``shim/playback.py``), echo suppression (``shim/echo.py``), the overlap evidence
(``shim/overlap_evidence.py``), the output path with its hold and release
(``shim/output.py``), turn decisions (``shim/turns.py``). ``SessionParts`` builds them,
applies the client's session settings to them, and is the host turn decisions run on
(``shim/turn_host.py``); a dialect supplies the moves they call on it: ``commit_turn``,
``cancel_response``, ``overlap_ended``.
"""

from __future__ import annotations

from typing import Any

from shim.actions import Action
from shim.assistant_audio import AssistantAudio
from shim.echo import EchoSuppressor
from shim.input_history import InputHistory
from shim.native_client import InputRates, NativeOptions
from shim.output import ActiveResponse, AssistantOutput
from shim.overlap import OverlapMachine, Step
from shim.overlap_evidence import Float32Array, OverlapEvidence
from shim.playback import PlaybackLedger
from shim.session_config import (
    ClientSessionConfig,
    SessionConfigError,
    TurnDetection,
    apply_session_update,
)
from shim.settings import ShimSettings
from shim.turns import Turns
from shim.vad_gate import VadGate
from shim.vad_timeline import VadTimeline


class SessionParts:
    """The parts ``duplex_emulated`` and ``barge_in_emulated`` share."""

    # Announce every user turn (speech_started/stopped); False where the upstream
    # takes turns itself and the proxy only speaks up to interrupt.
    announce_turns = True
    # GA's idle_timeout_ms kept (and acted on): only where the proxy takes the turns.
    idle_timeouts = False

    def __init__(
        self, session_id: str, model: str, settings: ShimSettings, vad_enabled: bool = True
    ) -> None:
        self.session_id, self.model, self.settings = session_id, model, settings
        # Server VAD as the operator configured it ([vad]), until the client says otherwise.
        self.config = ClientSessionConfig(turn=TurnDetection(settings.vad))
        self.vad_enabled = vad_enabled
        self.gate = VadGate(settings.vad)
        self.history = InputHistory()
        self.overlap = OverlapMachine()
        self.ledger = PlaybackLedger()
        self.echo = EchoSuppressor() if settings.echo_suppression else None
        latency = self.echo.latency if self.echo is not None else 0
        self.evidence = OverlapEvidence(latency, settings.overlap_keep)
        self.output = AssistantOutput(self.ledger, self.echo, self.history, self.overlap)
        self.turns = Turns(self)
        self.assistant_audio = AssistantAudio()
        self.rates = InputRates()
        self.native = NativeOptions()
        self.vad_timeline = VadTimeline()
        self._counter = 0
        self.last_item_id: str | None = None

    @property
    def response(self) -> ActiveResponse | None:
        return self.output.response

    def new_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_{self.session_id[-12:]}{self._counter:06d}"

    def apply_update(self, ev: dict[str, Any]) -> SessionConfigError | None:
        """Apply a session.update locally; a rejected update changes nothing."""
        try:
            cfg = apply_session_update(self.config, ev, self.settings.vad, self.idle_timeouts)
        except SessionConfigError as exc:
            return exc
        if cfg.turn.vad is not None:
            self.gate.update(cfg.turn.vad)
        elif self.gate.speaking:
            self.gate.reset()
        self.config = cfg
        self.native.note_update(ev)
        return None

    # ------------------------------------------------------------ output
    def new_response(self, response_id: str, item_id: str) -> ActiveResponse:
        return self.output.start(response_id, item_id)

    def release_output(self, now: float) -> list[Action]:
        return self.output.release(now, self.config.output_format.rate_hz)

    def far_for(self, start: int, end: int, heard: bool = False) -> Float32Array | None:
        """Audio sent that echoes in mic samples [start, end) (``heard``: at its echo's level)."""
        if self.echo is None:
            return None
        if heard:
            return self.echo.expected(start, end)
        return self.echo.echoing(start, end)

    # ------------------------------------------------------------ dialect moves
    def overlap_ended(self, step: Step, now: float) -> list[Action]:
        """An overlap was decided (``step.outcome``); a dialect may have more to do."""
        return []

    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        raise NotImplementedError

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]:
        raise NotImplementedError
