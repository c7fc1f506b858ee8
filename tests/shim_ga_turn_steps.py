"""A user's turns to a GA relay by script (``shim/dialects/relay_gate.py`` and its neighbours):
speech and silence as VAD probabilities, a turn sent at once, an answer in real time, a
push-to-talk commit over the answer, and what went upstream."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from shim.actions import Action, ForwardUpstream, SendUpstream
from shim.audio import b64encode
from tests.shim_ga_relay_script import RID, answer_delta
from tests.shim_script import Script, detection, upstream_events

SILENCE, SPEECH = 0.05, 0.95


def answer_in_real_time(sc: Script, chunks: int = 10) -> None:
    """An answer of ``chunks`` x 100 ms, each delta as the previous one ends; its
    ``response.done`` with the last. The client sends nothing meanwhile."""
    sc.upstream({"type": "response.created", "response": {"id": RID}})
    for n in range(chunks):
        if n:
            sc.tick(100)
        sc.upstream(answer_delta())
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})


def burst(
    sc: Script, probs: list[float], peak: int = 4000
) -> tuple[list[dict[str, Any]], list[Action]]:
    """One 32 ms append per window, all at once: a voice where the VAD will say speech."""
    events, out = [], []
    for p in probs:
        n = sc.rate * 32 // 1000
        t = np.arange(n) / sc.rate
        wave = np.sin(2 * np.pi * 140 * t) * (peak if p >= 0.5 else 0)
        ev = {"type": "input_audio_buffer.append", "audio": b64encode(wave.astype("<i2").tobytes())}
        events.append(ev)
        out += sc.client(ev)
    return events, out


def first_turn(sc: Script) -> None:
    sent = upstream_events(sc.speak([SPEECH] * 20 + [SILENCE] * 20))
    assert sent, "nothing plays: the first turn goes upstream"


def released(events: list[dict[str, Any]], out: list[Action]) -> list[int]:
    """Which of ``events`` went upstream, by index, in the order they went."""
    ids = {id(ev): n for n, ev in enumerate(events)}
    return [ids[id(a.event)] for a in out if isinstance(a, SendUpstream) and id(a.event) in ids]


def sent_kinds(out: list[Action]) -> list[str]:
    """What went upstream, by type, relayed events included, in order."""
    kinds = []
    for a in out:
        if isinstance(a, SendUpstream):
            kinds.append(str(a.event["type"]))
        elif isinstance(a, ForwardUpstream):
            kinds.append(str(orjson.loads(a.raw)["type"]))
    return kinds


APPEND, COMMIT, CREATE = "input_audio_buffer.append", "input_audio_buffer.commit", "response.create"


def generating(sc: Script, chunks: int = 10) -> None:
    """The upstream has sent ``chunks`` x 100 ms of its answer and goes on generating."""
    sc.upstream({"type": "response.created", "response": {"id": RID}})
    for n in range(chunks):
        if n:
            sc.tick(100)
        sc.upstream(answer_delta())


def done(sc: Script, status: str = "completed") -> list[Action]:
    return sc.upstream({"type": "response.done", "response": {"id": RID, "status": status}})


def pressed_over(sc: Script) -> None:
    first_turn(sc)
    detection(sc, on=False)
    generating(sc)


def not_interrupting(sc: Script, interrupt: bool = False) -> None:
    td = {"type": "server_vad", "interrupt_response": interrupt}
    sc.client(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": td}}},
        }
    )
