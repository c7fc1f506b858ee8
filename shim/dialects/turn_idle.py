"""GA's ``idle_timeout_ms`` in ``duplex_emulated``: the user's silence as a turn.

The proxy takes the turns over a turn-based upstream, so the idle timeout is its own
to keep (``shim/idle_timeout.py``): once the session has been quiet for the timeout,
the client is told ``input_audio_buffer.timeout_triggered``, the silent stretch is
committed as a user turn and answered, as GA does. The upstream takes no empty turn
(``invalid_audio``): a client that sent no audio meanwhile has a short silence sent.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from shim.actions import Action, SendClient
from shim.audio import Int16Array
from shim.idle_timeout import IdleTimer
from shim.input_history import InputHistory
from shim.output import AssistantOutput
from shim.session_config import ClientSessionConfig
from shim.settings import VAD_RATE
from shim.turns import Turns
from shim.vad_gate import VadGate

# What goes upstream for a stretch with no audio in it: 100 ms of silence.
SILENCE_SAMPLES = VAD_RATE // 10


class IdleHost(Protocol):
    config: ClientSessionConfig
    output: AssistantOutput
    turns: Turns
    gate: VadGate
    history: InputHistory
    upstream_busy: bool
    idle: IdleTimer
    last_item_id: str | None

    def new_id(self, prefix: str) -> str: ...

    def commit_audio(
        self, item_id: str, audio: Int16Array, end_ms: int, respond: bool, now: float, defer: bool
    ) -> list[Action]: ...


def timeout_ms(s: IdleHost) -> int | None:
    td = s.config.turn
    return td.idle_timeout_ms if td.vad is not None else None


def quiet(s: IdleHost, now: float) -> bool:
    """Nothing goes on: no answer live, playing or generating, no user speech. Turns
    waiting for the client's ``response.create`` (``create_response: false``) do not
    stop it: the timeout answers them with the silence, as GA's answers the conversation.
    An answer's audio has ended once the clock or the client's acks say so, whichever
    first (``AssistantOutput.sounding``): GA's timer runs from ``response.done`` plus the
    playback's duration, and acks that stop short of the end must not hold it off."""
    busy = s.upstream_busy or s.turns.in_progress or s.gate.speaking
    return not busy and not s.output.sounding(now)


def step(s: IdleHost, now: float) -> list[Action]:
    """The timer's look at the session; the timeout's events and turn once it is due."""
    mark = s.last_item_id  # a new turn or answer: the quiet starts again
    stretch = s.idle.step(now, timeout_ms(s), quiet(s, now), s.history.end_ms, mark)
    if stretch is None:
        return []
    item_id = s.new_id("item")
    start, end = stretch.audio_start_ms, stretch.audio_end_ms
    audio = s.history.between(start, end)
    if audio.size == 0:
        audio = np.zeros(SILENCE_SAMPLES, dtype=np.int16)
    told = {
        "type": "input_audio_buffer.timeout_triggered",
        "audio_start_ms": start,
        "audio_end_ms": end,
        "item_id": item_id,
    }
    return [SendClient(told), *s.commit_audio(item_id, audio, end, True, now, False)]


def deadline(s: IdleHost) -> float | None:
    """When the timeout is due if nothing happens first (the edge's wakeup)."""
    return s.idle.deadline(timeout_ms(s))
