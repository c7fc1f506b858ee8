"""A turn-based session with GA server VAD's ``idle_timeout_ms`` set, by script
(``shim/idle_timeout.py``): the VAD probabilities of a turn, the update that sets the
timeout, silence streamed while time passes, and a turn answered with an odd length of
audio (1000.5 ms)."""

from __future__ import annotations

from typing import Any

import numpy as np

from shim.audio import b64encode
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from tests.shim_script import Script, client_events, pcm_b64, types

SID = "sess_0123456789abcdef"
QUIET = [0.05] * 5
SPEECH = [0.9] * 20
SILENCE = [0.05] * 20  # longer than silence_duration_ms: the turn ends


def update(td: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "type": "session.update",
        "session": {"type": "realtime", "audio": {"input": {"turn_detection": td}}},
    }


def told_td(actions: list[Any]) -> Any:
    (updated,) = [e for e in client_events(actions) if e["type"] == "session.updated"]
    return updated["session"]["audio"]["input"]["turn_detection"]


def turn_based(idle_ms: int | None = 5000) -> Script:
    sc = Script(TurnBasedSession(SID, "demo", "demo-up", ShimSettings()))
    told = told_td(sc.client(update({"type": "server_vad", "idle_timeout_ms": idle_ms})))
    assert told["idle_timeout_ms"] == idle_ms
    return sc


def wait(sc: Script, ms: int, step_ms: int = 96) -> list[Any]:
    """The client streams silence for ``ms`` (VAD windows), the edge ticking as it does."""
    out: list[Any] = []
    for _ in range(ms // step_ms):
        out += sc.speak([0.05] * (step_ms // 32))
        out += sc.tick(0)
    return out


def odd_answer(sc: Script) -> str:
    """A turn answered with 1000.5 ms of 24 kHz audio (deltas of any size are legal);
    the answer's item id."""
    out = sc.speak(QUIET + SPEECH + SILENCE)
    assert "response.created" in types(out)
    for _ in range(10):
        sc.upstream({"type": "response.output_audio.delta", "audio": pcm_b64(100, 24000)})
    odd = b64encode((np.ones(12) * 500).astype("<i2").tobytes())  # 12 samples: 0.5 ms
    sc.upstream({"type": "response.output_audio.delta", "audio": odd})
    sc.upstream({"type": "transcription.done", "text": "hello"})
    sc.upstream({"type": "response.output_audio.done"})
    item = sc.s.ledger.latest()
    assert item is not None and item.sent_ms == 1000.5
    return item.item_id
