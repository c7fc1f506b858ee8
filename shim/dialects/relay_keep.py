"""The user's speech over an answer it does not interrupt, kept as a turn for a GA client.

With GA ``turn_detection.interrupt_response: false`` the user's speech while the answer
plays does not cancel it, but is still the user's turn: OpenAI commits whatever its
VAD detects and, with ``create_response``, answers it once the current answer is done.
A duplex upstream must not hear that speech while its answer is in progress (to it an
overlap, a barge-in or an interjection dropped: ``docs/fidelity.md``, rows 1a and 1b),
so the gate holds it (``relay_gate.py``) and, once the answer's end is acknowledged,
sends it from the speech's onset: the upstream's VAD then takes it as the next turn.

Only speech the overlap evidence judges the user's is kept (``Turns.user_speaking``):
the answer's echo must never become a turn, nor speech far quieter than the user's
(a background talker, or echo heard late). With ``interrupt_response`` true (the
default) the overlap decision alone says what goes (``docs/protocol.md``).
"""

from __future__ import annotations

from typing import Protocol

from shim.dialects.relay_gate import AudioGate
from shim.session_config import ClientSessionConfig
from shim.turns import Turns


class KeepHost(Protocol):
    audio_gate: AudioGate
    config: ClientSessionConfig
    turns: Turns


def follow(host: KeepHost, onset: int) -> None:
    """A VAD window over held audio: the current run (from input sample ``onset``) is
    kept as a turn if it is the user's speech and may not interrupt the answer."""
    td = host.config.turn
    if td.vad is None or td.interrupt_response or not host.audio_gate.held:
        return
    if host.turns.user_speaking():
        host.audio_gate.keep(onset)
